// An OpenID provider for TestE2EOAuth: panva's oidc-provider (a certified
// OpenID Connect implementation, pinned in tools/npm/package.json), run as
// it is, with a client-credentials client per test user (alice, bob, dave). It listens on a
// free loopback port, prints {"issuer": URL} on stdout once it serves, and
// runs until stdin closes.
//
// Each client's access tokens are JWTs (RFC 9068) for the resource it asks
// for (RFC 8707: the resource parameter becomes aud), signed RS256 by the
// provider's key, sub = the client id. Two clients get tokens the server
// must refuse though the provider signed them: "expired" (exp an hour
// ago) and "wrong-issuer" (iss another issuer's).
import { createServer } from 'node:http';
import { generateKeyPairSync } from 'node:crypto';
import Provider from 'oidc-provider';

const scopes = 'agents:files agents:run';
const clients = ['alice', 'bob', 'dave', 'expired', 'wrong-issuer'].map((id) => ({
  client_id: id,
  client_secret: `${id}-secret`,
  grant_types: ['client_credentials'],
  redirect_uris: [],
  response_types: [],
  scope: scopes,
}));

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'test-rs256', use: 'sig', alg: 'RS256' };

const server = createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients,
    scopes: ['openid', ...scopes.split(' ')],
    jwks: { keys: [jwk] },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resource) => ({
          audience: resource,
          scope: scopes,
          accessTokenTTL: 300,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
    formats: {
      customizers: {
        jwt(_ctx, token, jwt) {
          if (token.clientId === 'expired') {
            jwt.payload.iat -= 7200;
            jwt.payload.exp = jwt.payload.iat + 3600;
          }
          if (token.clientId === 'wrong-issuer') {
            jwt.payload.iss = 'https://other-issuer.example';
          }
        },
      },
    },
  });
  server.on('request', provider.callback());
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});

process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
