-- The same as migrations/sqlite/011_token_qos.sql: an API token's user's group and the QoS tiers
-- its jobs may ask for (JSON; NULL: the default tier only, any for an admin).

ALTER TABLE tokens ADD COLUMN user_group text;
ALTER TABLE tokens ADD COLUMN qos json;
