-- Leader election among brokers on one database: the leader holds a lease (renewed well before it
-- runs out) and says where it answers; a standby takes the lead, with the next term, only once the
-- lease has run out. Times are the database's own clock, so the brokers' clocks never matter.

ALTER TABLE leadership ADD COLUMN leader text;
ALTER TABLE leadership ADD COLUMN lease_until timestamptz;
