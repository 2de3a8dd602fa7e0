-- A start from a long history reads the live jobs only (Store.loadLive): those not ended, and those
-- with an attempt not ended (a replica still stopping). This index holds just those attempts.

CREATE INDEX attempts_live ON attempts (job_id) WHERE state <> 'ended';
