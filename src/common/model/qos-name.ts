// QoS tier and group names (the job file's `qos`, the server's QoS file, a token's `--qos` and `--group`).

/** The tier of a job that names none, and the one tier a server without a QoS file has. */
export const DEFAULT_QOS = "normal";

/** A tier or group name: lower-case letters, digits, - and _, up to 63. */
export const QOS_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
