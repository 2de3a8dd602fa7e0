-- Sharing policy: an API token's user's group (for the groups' limits of the QoS file) and the
-- QoS tiers its jobs may ask for (a JSON list; NULL: the default tier only, any for an admin).
-- A job's own tier travels in its spec (jobs.spec, `qos`).

ALTER TABLE tokens ADD COLUMN user_group TEXT;
ALTER TABLE tokens ADD COLUMN qos TEXT;
