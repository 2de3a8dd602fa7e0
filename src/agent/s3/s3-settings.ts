// Where an S3 request goes and with what credentials, pure: the sources are handed in, first
// first (a job's secret, then the agent's environment, then its profile in the shared files), and
// each setting is the first source's that has it: the credentials as a pair (with the session token
// of the same source), the region (default us-east-1), the endpoint (default AWS's own). No
// credentials anywhere: the request goes unsigned (a public bucket). Then the address of an object:
// path-style under a custom endpoint (`ENDPOINT/bucket/key`: what MinIO, Ceph and the other stores
// answer), virtual-hosted on AWS (`https://bucket.s3.REGION.amazonaws.com/key`), path-style on AWS
// for a bucket whose name cannot be a host name (dots break its TLS certificate, capitals and `_`
// are no host name).

import type { S3Object } from "../../common/model/s3-url.ts";
import type { AwsValues } from "./aws-config.ts";

/** The region of an S3 request when no source names one. */
export const DEFAULT_REGION = "us-east-1";

export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface S3Settings {
  /** Null: no source has a pair; the request goes unsigned. */
  credentials: S3Credentials | null;
  region: string;
  /** A custom endpoint (`http://127.0.0.1:9000`), or null for AWS's own. */
  endpoint: string | null;
}

/** The S3 values of the agent's environment, as the AWS CLI reads them. */
export function environmentValues(env: Readonly<Record<string, string | undefined>>): AwsValues {
  const values: AwsValues = {};
  const take = (name: keyof AwsValues, ...variables: string[]) => {
    for (const variable of variables) {
      const value = env[variable];
      if (value !== undefined && value !== "") {
        values[name] = value;
        return;
      }
    }
  };
  take("accessKeyId", "AWS_ACCESS_KEY_ID");
  take("secretAccessKey", "AWS_SECRET_ACCESS_KEY");
  take("sessionToken", "AWS_SESSION_TOKEN");
  take("region", "AWS_REGION", "AWS_DEFAULT_REGION");
  take("endpoint", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL");
  return values;
}

/** The settings of the sources, first first (see the head of this file). */
export function resolveS3Settings(sources: readonly AwsValues[]): S3Settings {
  const pair = sources.find(
    (source) => source.accessKeyId !== undefined && source.secretAccessKey !== undefined,
  );
  return {
    credentials: pair
      ? {
          accessKeyId: pair.accessKeyId as string,
          secretAccessKey: pair.secretAccessKey as string,
          ...(pair.sessionToken !== undefined ? { sessionToken: pair.sessionToken } : {}),
        }
      : null,
    region: sources.find((source) => source.region !== undefined)?.region ?? DEFAULT_REGION,
    endpoint: sources.find((source) => source.endpoint !== undefined)?.endpoint ?? null,
  };
}

/** A bucket that can be a host name under s3.REGION.amazonaws.com (and match its certificate). */
export function virtualHostable(bucket: string): boolean {
  return /^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/.test(bucket);
}

/** A key as an HTTP path: each segment percent-encoded (RFC 3986: also `!'()*`), the slashes kept. */
export function encodedKey(key: string): string {
  return key
    .split("/")
    .map((segment) =>
      encodeURIComponent(segment).replace(
        /[!'()*]/g,
        (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
      ),
    )
    .join("/");
}

/** The HTTP URL of an object under the settings (see the head of this file); throws naming a bad endpoint or region. */
export function objectUrl(object: S3Object, settings: Pick<S3Settings, "region" | "endpoint">): URL {
  const path = encodedKey(object.key);
  if (settings.endpoint !== null) {
    const endpoint = URL.parse(settings.endpoint);
    if (endpoint === null || (endpoint.protocol !== "http:" && endpoint.protocol !== "https:"))
      throw new Error(`the S3 endpoint ${JSON.stringify(settings.endpoint)} is not an http: or https: URL`);
    const base = `${endpoint.protocol}//${endpoint.host}${endpoint.pathname.replace(/\/+$/, "")}`;
    return new URL(`${base}/${encodeURIComponent(object.bucket)}/${path}`);
  }
  if (!/^[a-z0-9-]{1,64}$/.test(settings.region))
    throw new Error(`the S3 region ${JSON.stringify(settings.region)} is not a region name`);
  if (virtualHostable(object.bucket))
    return new URL(`https://${object.bucket}.s3.${settings.region}.amazonaws.com/${path}`);
  return new URL(`https://s3.${settings.region}.amazonaws.com/${encodeURIComponent(object.bucket)}/${path}`);
}
