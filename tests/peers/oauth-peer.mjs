// A remote MCP server behind a real OAuth 2 authorization server, for the sign-in tests that must
// not rely on Taskdeck's own fixtures: the authorization server is `oauth2-mock-server` (pinned in
// package.json: discovery, PKCE S256 checked, signed JWT access tokens, refresh tokens), and the
// MCP endpoint here is a proxy to an upstream MCP server (the demo server over HTTP) for requests
// whose bearer token that server signed and that have not been revoked here.
//
// usage: node oauth-peer.mjs UPSTREAM_MCP_URL
// Prints one JSON line: {"mcp": URL, "issuer": URL, "admin": URL}. There is no client
// registration: a client sets its client id in its config (any id is taken).
// POST ADMIN/revoke revokes every access token issued so far, and refuses every refresh until
// the next sign-in (an authorization code exchanged). GET ADMIN/log lists what was asked of the
// token endpoint and how the MCP endpoint answered (no token in it).
import { createPublicKey, verify } from 'node:crypto';
import http from 'node:http';
import { OAuth2Server } from 'oauth2-mock-server';

const upstream = new URL(process.argv[2] ?? '');
const log = [];
// Tokens carry the generation they were issued in; a revoke starts a new one.
let generation = 1;
let refreshRefused = false;

const auth = new OAuth2Server();
await auth.issuer.keys.generate('RS256');
await auth.start(0, '127.0.0.1');
auth.issuer.url = `http://127.0.0.1:${auth.address().port}`;
auth.service.on('beforeTokenSigning', (token) => {
  token.payload.gen = generation;
});
auth.service.on('beforeResponse', (response, req) => {
  const grant = req.body?.grant_type;
  log.push({ at: 'token', grant, refused: grant === 'refresh_token' && refreshRefused });
  if (grant === 'authorization_code') refreshRefused = false;
  if (grant === 'refresh_token' && refreshRefused) {
    response.statusCode = 400;
    response.body = { error: 'invalid_grant', error_description: 'the refresh token was revoked' };
  }
});

function b64url(s) {
  return Buffer.from(s.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
}

/** The token's claims when the authorization server signed it, it is current, and not revoked. */
function valid(token) {
  const parts = (token ?? '').split('.');
  if (parts.length !== 3) return null;
  try {
    const header = JSON.parse(b64url(parts[0]).toString());
    const jwk = auth.issuer.keys.toJSON().find((k) => k.kid === header.kid);
    if (!jwk) return null;
    const signed = verify('RSA-SHA256', Buffer.from(`${parts[0]}.${parts[1]}`), createPublicKey({ key: jwk, format: 'jwk' }), b64url(parts[2]));
    const claims = JSON.parse(b64url(parts[1]).toString());
    const now = Date.now() / 1000;
    if (!signed || claims.iss !== auth.issuer.url || claims.exp < now || claims.gen !== generation) return null;
    return claims;
  } catch {
    return null;
  }
}

const gate = http.createServer((req, res) => {
  const base = `http://127.0.0.1:${gate.address().port}`;
  const path = new URL(req.url, base).pathname;
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const json = (status, value, headers = {}) => {
      res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
      res.end(JSON.stringify(value));
    };
    if (path === '/.well-known/oauth-protected-resource/mcp' || path === '/.well-known/oauth-protected-resource') {
      return json(200, { resource: `${base}/mcp`, authorization_servers: [auth.issuer.url], scopes_supported: ['mcp'] });
    }
    if (path === '/admin/revoke' && req.method === 'POST') {
      generation += 1;
      refreshRefused = true;
      return json(200, { generation });
    }
    if (path === '/admin/log') return json(200, log);
    if (path !== '/mcp') return json(404, { error: 'not_found' });
    const header = req.headers.authorization ?? '';
    const token = header.startsWith('Bearer ') ? header.slice(7) : null;
    if (!valid(token)) {
      log.push({ at: 'mcp', method: req.method, status: 401 });
      let challenge = `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp", scope="mcp"`;
      if (token) challenge += ', error="invalid_token"';
      return json(401, { error: 'unauthorized' }, { 'WWW-Authenticate': challenge });
    }
    const headers = { ...req.headers, host: upstream.host };
    delete headers.authorization;
    delete headers['content-length'];
    const forwarded = http.request(upstream, { method: req.method, headers: { ...headers, 'content-length': body.length } }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    forwarded.on('error', (e) => json(502, { error: 'upstream', detail: String(e) }));
    forwarded.end(body);
  });
});
gate.listen(0, '127.0.0.1', () => {
  const base = `http://127.0.0.1:${gate.address().port}`;
  console.log(JSON.stringify({ mcp: `${base}/mcp`, issuer: auth.issuer.url, admin: `${base}/admin` }));
});
