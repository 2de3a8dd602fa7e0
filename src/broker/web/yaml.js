// A job file (plain JSON data) written as YAML for reading: maps, lists, strings, numbers, booleans.

const PLAIN = /^[A-Za-z0-9_./@-][A-Za-z0-9_ ./@:-]*$/;

function scalar(value) {
  if (value === null) return "null";
  if (typeof value === "string") {
    if (
      PLAIN.test(value) &&
      !/^(true|false|null|yes|no|~|[-+.\d][\d.eE+-]*)$/i.test(value) &&
      !value.endsWith(" ")
    )
      return value;
    return JSON.stringify(value);
  }
  return String(value);
}

export function toYaml(value, indent = "") {
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    return value
      .map((item) => {
        const text =
          typeof item === "object" && item !== null ? toYaml(item, `${indent}  `).trimStart() : scalar(item);
        return `${indent}- ${text}`;
      })
      .join("\n");
  }
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value).filter(([, item]) => item !== undefined);
    if (entries.length === 0) return "{}";
    return entries
      .map(([key, item]) => {
        if (
          typeof item === "object" &&
          item !== null &&
          (Array.isArray(item) ? item.length : Object.keys(item).length)
        )
          return `${indent}${scalar(key)}:\n${toYaml(item, `${indent}  `)}`;
        return `${indent}${scalar(key)}: ${typeof item === "object" && item !== null ? toYaml(item) : scalar(item)}`;
      })
      .join("\n");
  }
  return `${indent}${scalar(value)}`;
}
