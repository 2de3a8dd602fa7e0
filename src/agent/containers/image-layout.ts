// An OCI image layout (index.json, blobs/sha256/...) read as data: which manifest a tag names, the
// manifest's config and layers, the config's environment. Pure: JSON text in, descriptors out;
// each error says what of the image is wrong.

/** A sha256 digest as OCI writes it. */
const DIGEST = /^sha256:[0-9a-f]{64}$/;

const MANIFEST_TYPES = [
  "application/vnd.oci.image.manifest.v1+json",
  "application/vnd.docker.distribution.manifest.v2+json",
];
const INDEX_TYPES = [
  "application/vnd.oci.image.index.v1+json",
  "application/vnd.docker.distribution.manifest.list.v2+json",
];
const TAG_ANNOTATION = "org.opencontainers.image.ref.name";

/** A layer's compression, from its media type. */
export type LayerCompression = "gzip" | "none";

export interface LayerDescriptor {
  digest: string;
  compression: LayerCompression;
}

export interface ImageManifest {
  config: string;
  layers: LayerDescriptor[];
}

interface Descriptor {
  mediaType?: unknown;
  digest?: unknown;
  annotations?: Record<string, unknown>;
}

function json(text: string, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error(`the image's ${what} is not JSON`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new Error(`the image's ${what} is not an object`);
  return value as Record<string, unknown>;
}

function digestOf(descriptor: Descriptor, what: string): string {
  if (typeof descriptor.digest !== "string" || !DIGEST.test(descriptor.digest))
    throw new Error(`the image's ${what} has no sha256 digest`);
  return descriptor.digest;
}

/** The hex part of a digest: a blob's file name under blobs/sha256/. */
export function digestHex(digest: string): string {
  return digest.slice("sha256:".length);
}

/**
 * The digest of the manifest that index.json names: the one tagged `tag`, or without a tag its only
 * one. A nested index (a multi-platform image) is not taken yet.
 */
export function manifestDigest(indexText: string, tag?: string): string {
  const index = json(indexText, "index.json");
  const manifests = Array.isArray(index.manifests) ? (index.manifests as Descriptor[]) : [];
  const chosen =
    tag === undefined
      ? manifests.length === 1
        ? manifests[0]
        : undefined
      : manifests.find((each) => each.annotations?.[TAG_ANNOTATION] === tag);
  if (chosen === undefined) {
    const tags = manifests
      .map((each) => each.annotations?.[TAG_ANNOTATION])
      .filter((each) => typeof each === "string");
    if (tag !== undefined)
      throw new Error(`the image layout has no image tagged ${tag} (its tags: ${tags.join(", ") || "none"})`);
    throw new Error(
      `the image layout holds ${manifests.length} images: name one with oci:DIR:TAG (its tags: ${tags.join(", ") || "none"})`,
    );
  }
  if (typeof chosen.mediaType === "string" && INDEX_TYPES.includes(chosen.mediaType))
    throw new Error("the image is a multi-platform index: not supported yet (copy one platform's image)");
  return digestOf(chosen, "index.json entry");
}

/** The config and layers a manifest names, in the order they apply. */
export function parseManifest(text: string): ImageManifest {
  const manifest = json(text, "manifest");
  if (typeof manifest.mediaType === "string" && !MANIFEST_TYPES.includes(manifest.mediaType))
    throw new Error(`the image's manifest is a ${manifest.mediaType}, not an image manifest`);
  const config = digestOf((manifest.config ?? {}) as Descriptor, "manifest's config");
  if (!Array.isArray(manifest.layers)) throw new Error("the image's manifest lists no layers");
  const layers = (manifest.layers as Descriptor[]).map((layer, index) => {
    const digest = digestOf(layer, `layer ${index}`);
    const type = typeof layer.mediaType === "string" ? layer.mediaType : "";
    if (type.endsWith("+zstd") || type.endsWith(".zstd"))
      throw new Error(`the image's layer ${digest} is zstd-compressed: not supported yet`);
    const compression: LayerCompression = type.endsWith("+gzip") || type.endsWith(".gzip") ? "gzip" : "none";
    return { digest, compression };
  });
  return { config, layers };
}

/** The environment the image's config gives (`config.Env`, `NAME=value` lines), by name. */
export function imageEnvironment(configText: string): Record<string, string> {
  const config = json(configText, "config");
  const inner = (config.config ?? {}) as { Env?: unknown };
  const environment: Record<string, string> = {};
  if (!Array.isArray(inner.Env)) return environment;
  for (const line of inner.Env) {
    if (typeof line !== "string") continue;
    const equals = line.indexOf("=");
    if (equals > 0) environment[line.slice(0, equals)] = line.slice(equals + 1);
  }
  return environment;
}
