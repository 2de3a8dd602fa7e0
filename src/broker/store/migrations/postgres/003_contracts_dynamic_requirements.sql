-- The same changes as migrations/sqlite/003_contracts_dynamic_requirements.sql: the requirements a
-- running job wrote for itself (replacing its job file's for later placements) and the hosts where
-- it broke its performance contract.

ALTER TABLE jobs ADD COLUMN dynamic_requirements text;
ALTER TABLE jobs ADD COLUMN slow_hosts json NOT NULL DEFAULT '[]';
