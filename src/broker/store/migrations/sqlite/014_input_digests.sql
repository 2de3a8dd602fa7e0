-- The SHA-256 of each uploaded input of a job (JSON: {path: hex}), computed as the server stored
-- them: the scheduler prefers hosts whose content cache holds them (scheduler/data-affinity.ts);
-- NULL for a job submitted to an earlier version (its uploaded inputs count for no host).

ALTER TABLE jobs ADD COLUMN input_digests TEXT;
