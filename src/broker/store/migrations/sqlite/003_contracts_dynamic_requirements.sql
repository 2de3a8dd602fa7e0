-- Performance contracts and self-migration: the requirements a running job wrote for itself
-- (replacing its job file's for later placements) and the hosts where it broke its contract.

ALTER TABLE jobs ADD COLUMN dynamic_requirements TEXT;
ALTER TABLE jobs ADD COLUMN slow_hosts TEXT NOT NULL DEFAULT '[]';
