-- The SHA-256 of each uploaded input of a job (JSON: {path: hex}), computed as the server stored
-- them and sent with each start, so that agents need not ask for them; NULL for a job submitted to
-- an earlier version (its agents ask the server per input, as before).

ALTER TABLE jobs ADD COLUMN input_digests TEXT;
