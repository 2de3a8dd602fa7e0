// The URL a server advertises (redirects, leader record, pilots' --server): its default from the
// listen address and the machine's names, and the checks on --advertise-url.

import { describe, expect, it } from "vitest";
import {
  type AdvertiseFacts,
  defaultAdvertiseUrl,
  isLoopbackHost,
  parseAdvertiseUrl,
} from "../../../../src/broker/server/advertise-url.ts";

const machine = { hostName: "node7", fullName: "node7.grid.example.org", addresses: ["10.1.2.7", "fd00::7"] };

describe("default advertised URL", () => {
  const cases: { name: string; facts: AdvertiseFacts; url: string; warns: boolean }[] = [
    {
      name: "a specific IPv4 listen address is advertised as it is",
      facts: { scheme: "http", listenHost: "10.1.2.7", port: 4780, ...machine },
      url: "http://10.1.2.7:4780",
      warns: false,
    },
    {
      name: "loopback listen: loopback advertised (reachable here only anyway)",
      facts: { scheme: "http", listenHost: "127.0.0.1", port: 4780, ...machine },
      url: "http://127.0.0.1:4780",
      warns: false,
    },
    {
      name: "a specific IPv6 listen address goes in brackets",
      facts: { scheme: "https", listenHost: "fd00::7", port: 443, ...machine },
      url: "https://[fd00::7]:443",
      warns: false,
    },
    {
      name: "a listen host name is advertised as it is",
      facts: { scheme: "http", listenHost: "broker.example.org", port: 80, ...machine },
      url: "http://broker.example.org:80",
      warns: false,
    },
    {
      name: "0.0.0.0: the fully qualified host name, with a warning",
      facts: { scheme: "http", listenHost: "0.0.0.0", port: 4780, ...machine },
      url: "http://node7.grid.example.org:4780",
      warns: true,
    },
    {
      name: ":: is a wildcard too, and the scheme follows TLS",
      facts: { scheme: "https", listenHost: "::", port: 8443, ...machine },
      url: "https://node7.grid.example.org:8443",
      warns: true,
    },
    {
      name: "a host name that does not resolve: the short name",
      facts: { scheme: "http", listenHost: "0.0.0.0", port: 4780, ...machine, fullName: null },
      url: "http://node7:4780",
      warns: true,
    },
    {
      name: "a host name that resolves to itself only: the short name",
      facts: { scheme: "http", listenHost: "0.0.0.0", port: 4780, ...machine, fullName: "node7" },
      url: "http://node7:4780",
      warns: true,
    },
    {
      name: "a host name that is localhost: the first interface address, never loopback",
      facts: {
        scheme: "http",
        listenHost: "0.0.0.0",
        port: 4780,
        ...machine,
        hostName: "localhost",
        fullName: "localhost",
      },
      url: "http://10.1.2.7:4780",
      warns: true,
    },
    {
      name: "a full name that is a loopback name is not used",
      facts: {
        scheme: "http",
        listenHost: "0.0.0.0",
        port: 4780,
        ...machine,
        fullName: "localhost.localdomain",
      },
      url: "http://node7:4780",
      warns: true,
    },
    {
      name: "an IPv6-only machine named localhost: its address in brackets",
      facts: {
        scheme: "http",
        listenHost: "::",
        port: 4780,
        hostName: "localhost",
        fullName: null,
        addresses: ["fd00::7"],
      },
      url: "http://[fd00::7]:4780",
      warns: true,
    },
    {
      name: "nothing else at all: loopback, with a warning that says so",
      facts: {
        scheme: "http",
        listenHost: "0.0.0.0",
        port: 4780,
        hostName: "localhost",
        fullName: null,
        addresses: [],
      },
      url: "http://127.0.0.1:4780",
      warns: true,
    },
  ];
  for (const testCase of cases) {
    it(testCase.name, () => {
      const choice = defaultAdvertiseUrl(testCase.facts);
      expect(choice.url).toBe(testCase.url);
      if (testCase.warns) {
        expect(choice.warning).toContain(testCase.url);
        expect(choice.warning).toContain("--advertise-url");
      } else expect(choice.warning).toBeNull();
    });
  }

  it("with a wildcard listen address and any name or address, the URL is never a loopback one", () => {
    for (const listenHost of ["0.0.0.0", "::"])
      for (const hostName of ["node7", "localhost", "node7.example.org"])
        for (const fullName of [null, hostName, "localhost"]) {
          const { url } = defaultAdvertiseUrl({
            scheme: "http",
            listenHost,
            port: 1,
            hostName,
            fullName,
            addresses: ["10.0.0.1"],
          });
          expect(isLoopbackHost(new URL(url).hostname), url).toBe(false);
        }
  });
});

describe("--advertise-url", () => {
  const plain = { tls: false, listenHost: "0.0.0.0" };
  const accepted: [string, { tls: boolean; listenHost: string }, string][] = [
    ["http://10.1.2.7:4780", plain, "http://10.1.2.7:4780"],
    ["http://broker.example.org:4780/", plain, "http://broker.example.org:4780"],
    ["https://broker.example.org", { tls: true, listenHost: "0.0.0.0" }, "https://broker.example.org"],
    ["http://[fd00::7]:4780", plain, "http://[fd00::7]:4780"],
    ["http://127.0.0.1:4780", { tls: false, listenHost: "127.0.0.1" }, "http://127.0.0.1:4780"],
  ];
  for (const [text, options, url] of accepted)
    it(`accepts ${text}`, () => expect(parseAdvertiseUrl(text, options)).toBe(url));

  const refused: [string, { tls: boolean; listenHost: string }, RegExp][] = [
    ["broker:4780", plain, /http:\/\/ or https:\/\//],
    ["not a url", plain, /not a URL/],
    ["ftp://broker:21", plain, /http:\/\/ or https:\/\//],
    ["https://broker:4780", plain, /serves HTTP .*must start with http:\/\//],
    ["http://broker:4780", { tls: true, listenHost: "0.0.0.0" }, /serves HTTPS .*must start with https:\/\//],
    ["http://broker:4780/steward", plain, /path, query or fragment/],
    ["http://broker:4780/?x=1", plain, /path, query or fragment/],
    ["http://user:secret@broker:4780", plain, /credentials/],
    ["http://127.0.0.1:4780", plain, /loopback .*listens on 0\.0\.0\.0/],
    ["http://localhost:4780", { tls: false, listenHost: "10.1.2.7" }, /loopback/],
    ["http://[::1]:4780", plain, /loopback/],
  ];
  for (const [text, options, message] of refused)
    it(`refuses ${text}`, () => expect(() => parseAdvertiseUrl(text, options)).toThrow(message));
});
