// A real OAuth 2.1 issuer for Paddock's resource-server tests: oauth2-mock-server on a loopback
// port, with one RS256 key. Prints one JSON line `{"issuer": ..., "port": ...}` once listening,
// then serves until stdin closes (so it never outlives the test that started it).
//
// - POST /token: the mock's own token endpoint (client_credentials). Extra form fields choose
//   the token: `claims` (a JSON object merged into the payload; a null value removes the claim)
//   and `kid` (the header's key id, e.g. one the JWKS does not hold).
// - POST /test/hs256: a token signed HS256 with the public key's PEM as the HMAC secret
//   (algorithm confusion), claims as above, the real key's kid.
// - POST /test/rotate: a new RS256 key is added to the JWKS; answers its kid.
// - GET /test/stats: how many times the JWKS has been fetched.
import { createHmac, createPublicKey } from "node:crypto";
import { createServer } from "node:http";
import { OAuth2Issuer, OAuth2Service } from "oauth2-mock-server";

const issuer = new OAuth2Issuer();
const key = await issuer.keys.generate("RS256", { kid: "paddock-test-key" });
const service = new OAuth2Service(issuer);
let jwksFetches = 0;

function applyClaims(payload, body) {
  if (typeof body?.claims === "string" && body.claims !== "") {
    for (const [name, value] of Object.entries(JSON.parse(body.claims))) {
      if (value === null) delete payload[name];
      else payload[name] = value;
    }
  }
}

service.on("beforeTokenSigning", (token, req) => {
  token.payload.sub = "alice";
  applyClaims(token.payload, req.body);
  if (typeof req.body?.kid === "string") token.header.kid = req.body.kid;
});

const b64 = (value) => Buffer.from(typeof value === "string" ? value : JSON.stringify(value)).toString("base64url");

service.addRoute("POST", "/test/hs256", (req, res) => {
  const now = Math.floor(Date.now() / 1000);
  const payload = { iss: issuer.url, sub: "alice", iat: now, exp: now + 3600 };
  applyClaims(payload, req.body);
  const pem = createPublicKey({ key: issuer.keys.get(key.kid), format: "jwk" }).export({ type: "spki", format: "pem" });
  const signingInput = `${b64({ alg: "HS256", typ: "JWT", kid: key.kid })}.${b64(payload)}`;
  const signature = createHmac("sha256", pem).update(signingInput).digest("base64url");
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({ access_token: `${signingInput}.${signature}` }));
});

service.addRoute("POST", "/test/rotate", async (_req, res) => {
  const added = await issuer.keys.generate("RS256");
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({ kid: added.kid }));
});

service.addRoute("GET", "/test/stats", (_req, res) => {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({ jwks: jwksFetches }));
});

const handler = service.requestHandler;
const server = createServer((req, res) => {
  if (req.method === "GET" && req.url === "/jwks") jwksFetches += 1;
  handler(req, res);
});
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address();
  issuer.url = `http://127.0.0.1:${port}`;
  process.stdout.write(`${JSON.stringify({ issuer: issuer.url, port })}\n`);
});

process.stdin.resume();
process.stdin.on("end", () => process.exit(0));
process.stdin.on("close", () => process.exit(0));
