// A real OAuth 2.1 / OpenID authorization server for mcpd's auth tests: npm `oidc-provider` (pinned in
// package.json / package-lock.json), on 127.0.0.1 over plain http, with a headless login + consent so
// SDK clients can run the whole authorization-code flow without a browser. See NOTES.md.
//
//   AS_PORT=0 AS_RESOURCE=http://127.0.0.1:8080/mcp AS_SCOPES="mcp:tools mcp:admin" node server.mjs
//
// stdout: exactly one line once it serves, `authserver listening on http://127.0.0.1:PORT` (PORT is
// the issuer's port; the issuer is that URL, no trailing slash unless AS_ISSUER_TRAILING_SLASH=1).
// stderr: `authserver info {json}` (endpoints, pre-registered clients and their secrets, settings),
// then one `authserver error ...` line per error the provider reports (and, with AS_LOG=1, one line
// per request). Test-only endpoints under /_test/ (GET /_test/info, POST /_test/rotate-keys) and
// SIGUSR2 (= rotate keys). Stops on SIGTERM / SIGINT.

import crypto from 'node:crypto';
import http from 'node:http';
import Provider, { errors } from 'oidc-provider';
import { createLocalJWKSet, jwtVerify } from 'jose';

const env = process.env;
const list = v => String(v ?? '').split(/[\s,]+/).filter(Boolean);
const flag = (v, dflt) => (v === undefined || v === '' ? dflt : !['0', 'false', 'no', 'off'].includes(String(v).toLowerCase()));
function fail(msg) {
    console.error(`authserver: ${msg}`);
    process.exit(2);
}

// ---- settings (every one from the environment; NOTES.md lists them) ---------------------------
const HOST = env.AS_HOST || '127.0.0.1';
const PORT = Number(env.AS_PORT ?? 0);
const RESOURCES = list(env.AS_RESOURCE ?? 'http://127.0.0.1:8080/mcp');
const SCOPES = list(env.AS_SCOPES ?? 'mcp:tools mcp:admin');
const TOKEN_FORMAT = (env.AS_TOKEN_FORMAT || 'jwt').toLowerCase();
const OPAQUE_RESOURCES = new Set(list(env.AS_OPAQUE_RESOURCES));
const TOKEN_TTL = Number(env.AS_TOKEN_TTL ?? 300);
const SIGNING_ALG = env.AS_SIGNING_ALG || 'RS256';
const DPOP = flag(env.AS_DPOP, false);
const DPOP_NONCE = flag(env.AS_DPOP_NONCE, false);
const REFRESH = (env.AS_REFRESH_TOKENS || 'offline_access').toLowerCase();
const SCOPE_CAP = flag(env.AS_CLIENT_SCOPE_CAP, true);
const DEFAULT_RESOURCE = env.AS_DEFAULT_RESOURCE || '';
const ACCOUNT = env.AS_ACCOUNT || 'test-user';
const ROTATE_KEEP_OLD = flag(env.AS_ROTATE_KEEP_OLD, true);
const TRAILING_SLASH = flag(env.AS_ISSUER_TRAILING_SLASH, false);
const TEST_ENDPOINTS = flag(env.AS_TEST_ENDPOINTS, true);
const LOG = flag(env.AS_LOG, false);
const INTROSPECTOR = {
    client_id: env.AS_INTROSPECTION_CLIENT_ID || 'mcpd-introspector',
    client_secret: env.AS_INTROSPECTION_CLIENT_SECRET || 'mcpd-introspector-secret'
};
const CC = {
    client_id: env.AS_CC_CLIENT_ID || 'mcp-cc-client',
    client_secret: env.AS_CC_CLIENT_SECRET || 'mcp-cc-client-secret',
    scope: env.AS_CC_SCOPE ?? SCOPES.join(' ')
};

// RFC 8693: a confidential client (mcpd as a gateway) that trades a token this AS issued for one
// whose aud is another AS_RESOURCE.
const TX = {
    client_id: env.AS_TX_CLIENT_ID || 'mcpd-exchanger',
    client_secret: env.AS_TX_CLIENT_SECRET || 'mcpd-exchanger-secret'
};
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const AT_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
const JWT_TYPE = 'urn:ietf:params:oauth:token-type:jwt';
// private_key_jwt client_credentials client (ES256); its private key PEM is in the info line.
const CCJ_PAIR = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
const CCJ = {
    client_id: env.AS_CCJ_CLIENT_ID || 'mcp-cc-jwt-client',
    private_key_pem: CCJ_PAIR.privateKey.export({ format: 'pem', type: 'pkcs8' }),
    public_jwk: { ...CCJ_PAIR.publicKey.export({ format: 'jwk' }), alg: 'ES256', use: 'sig', kid: 'ccj-1' }
};

if (!Number.isInteger(PORT) || PORT < 0 || PORT > 65535) fail(`AS_PORT: not a port: ${env.AS_PORT}`);
if (RESOURCES.length === 0) fail('AS_RESOURCE: at least one resource URL is needed');
for (const r of RESOURCES) {
    try {
        new URL(r);
    } catch {
        fail(`AS_RESOURCE: not a URL: ${r}`);
    }
}
if (SCOPES.length === 0) fail('AS_SCOPES: at least one scope is needed');
if (!['jwt', 'opaque'].includes(TOKEN_FORMAT)) fail(`AS_TOKEN_FORMAT: jwt or opaque, not ${TOKEN_FORMAT}`);
if (!(TOKEN_TTL > 0)) fail(`AS_TOKEN_TTL: a positive number of seconds, not ${env.AS_TOKEN_TTL}`);
if (!['offline_access', 'always', 'never'].includes(REFRESH)) fail(`AS_REFRESH_TOKENS: offline_access, always or never, not ${REFRESH}`);
if (!['RS256', 'PS256', 'ES256', 'EdDSA'].includes(SIGNING_ALG)) fail(`AS_SIGNING_ALG: RS256, PS256, ES256 or EdDSA, not ${SIGNING_ALG}`);
if (DEFAULT_RESOURCE && !RESOURCES.includes(DEFAULT_RESOURCE)) fail('AS_DEFAULT_RESOURCE must be one of AS_RESOURCE');

// ---- signing keys ------------------------------------------------------------------------------
let keySerial = 0;
function newSigningKey() {
    keySerial += 1;
    let pair;
    if (SIGNING_ALG === 'ES256') pair = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
    else if (SIGNING_ALG === 'EdDSA') pair = crypto.generateKeyPairSync('ed25519');
    else pair = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    const jwk = pair.privateKey.export({ format: 'jwk' });
    return { ...jwk, kid: `k${keySerial}-${crypto.randomBytes(4).toString('hex')}`, alg: SIGNING_ALG, use: 'sig' };
}
// keys[0] signs; the others are only published (kept after a rotation for tokens still out there).
let keys = [newSigningKey()];

// ---- storage: one in-memory store shared by every Provider instance (key rotation builds a new one)
const store = new Map(); // `${model}:${id}` -> { payload, expiresAt }
const grantMembers = new Map(); // grantId -> Set of store keys
const sessionUids = new Map();
const userCodes = new Map();
class TestAdapter {
    constructor(model) {
        this.model = model;
    }
    key(id) {
        return `${this.model}:${id}`;
    }
    read(key) {
        const e = store.get(key);
        if (!e) return undefined;
        if (e.expiresAt !== undefined && e.expiresAt <= Date.now()) {
            store.delete(key);
            return undefined;
        }
        return e.payload;
    }
    async upsert(id, payload, expiresIn) {
        if (this.model === 'Client' && !SCOPE_CAP && payload.scope !== undefined) {
            // AS_CLIENT_SCOPE_CAP=0: a registered client may ask for any scope later (see NOTES.md).
            payload = { ...payload };
            delete payload.scope;
        }
        const key = this.key(id);
        store.set(key, { payload, expiresAt: typeof expiresIn === 'number' ? Date.now() + expiresIn * 1000 : undefined });
        if (payload.grantId) {
            if (!grantMembers.has(payload.grantId)) grantMembers.set(payload.grantId, new Set());
            grantMembers.get(payload.grantId).add(key);
        }
        if (this.model === 'Session' && payload.uid) sessionUids.set(payload.uid, id);
        if (payload.userCode) userCodes.set(payload.userCode, id);
    }
    async find(id) {
        return this.read(this.key(id));
    }
    async findByUid(uid) {
        const id = sessionUids.get(uid);
        return id === undefined ? undefined : this.find(id);
    }
    async findByUserCode(userCode) {
        const id = userCodes.get(userCode);
        return id === undefined ? undefined : this.find(id);
    }
    async consume(id) {
        const payload = await this.find(id);
        if (payload) payload.consumed = Math.floor(Date.now() / 1000);
    }
    async destroy(id) {
        store.delete(this.key(id));
    }
    async revokeByGrantId(grantId) {
        for (const key of grantMembers.get(grantId) ?? []) store.delete(key);
        grantMembers.delete(grantId);
    }
}

// ---- the provider --------------------------------------------------------------------------------
const cookieKeys = [crypto.randomBytes(32).toString('base64url')];

function resourceServerInfo(indicator) {
    const opaque = TOKEN_FORMAT === 'opaque' || OPAQUE_RESOURCES.has(indicator);
    const info = {
        scope: SCOPES.join(' '),
        audience: indicator,
        accessTokenTTL: TOKEN_TTL,
        accessTokenFormat: opaque ? 'opaque' : 'jwt'
    };
    if (!opaque) info.jwt = { sign: { alg: SIGNING_ALG, kid: keys[0].kid } };
    return info;
}

function buildProvider(issuer) {
    const scopes = ['openid', ...SCOPES];
    if (REFRESH !== 'never') scopes.push('offline_access');
    const provider = new Provider(issuer, {
        adapter: TestAdapter,
        jwks: { keys },
        clients: [
            // The resource server (mcpd) introspects with this one (RFC 7662); it gets no tokens itself.
            {
                ...INTROSPECTOR,
                client_name: 'mcpd (introspection)',
                grant_types: [],
                response_types: [],
                redirect_uris: [],
                token_endpoint_auth_method: 'client_secret_basic'
            },
            // A machine client for the client_credentials grant.
            {
                ...CC,
                client_name: 'client_credentials test client',
                grant_types: ['client_credentials'],
                response_types: [],
                redirect_uris: [],
                token_endpoint_auth_method: 'client_secret_basic'
            }
            ,
            {
                ...TX,
                client_name: 'mcpd gateway (token exchange)',
                grant_types: [TOKEN_EXCHANGE, 'client_credentials'],
                response_types: [],
                redirect_uris: [],
                token_endpoint_auth_method: 'client_secret_basic'
            },
            {
                client_id: CCJ.client_id,
                client_name: 'client_credentials, private_key_jwt',
                grant_types: ['client_credentials'],
                response_types: [],
                redirect_uris: [],
                token_endpoint_auth_method: 'private_key_jwt',
                token_endpoint_auth_signing_alg: 'ES256',
                jwks: { keys: [CCJ.public_jwk] }
            }
        ],
        extraTokenClaims: async (_ctx, token) => (token.gty === 'token-exchange' ? { act: { sub: token.clientId } } : undefined),
        scopes,
        claims: { openid: ['sub'] },
        findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
        interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
        cookies: { keys: cookieKeys },
        pkce: { required: () => true },
        responseTypes: ['code'],
        clientBasedCORS: () => true,
        ttl: {
            AccessToken: (_ctx, token) => token.resourceServer?.accessTokenTTL ?? TOKEN_TTL,
            ClientCredentials: (_ctx, token) => token.resourceServer?.accessTokenTTL ?? TOKEN_TTL,
            AuthorizationCode: 60,
            Interaction: 600,
            Grant: 24 * 3600,
            Session: 24 * 3600,
            RefreshToken: 24 * 3600
        },
        issueRefreshToken: async (_ctx, client, code) => {
            if (!client.grantTypeAllowed('refresh_token')) return false;
            if (REFRESH === 'always') return true;
            if (REFRESH === 'never') return false;
            return code.scopes.has('offline_access');
        },
        features: {
            devInteractions: { enabled: false },
            registration: { enabled: true, initialAccessToken: false },
            clientCredentials: { enabled: true },
            introspection: { enabled: true },
            revocation: { enabled: true },
            dPoP: { enabled: DPOP, ...(DPOP_NONCE ? { nonceSecret: crypto.randomBytes(32), requireNonce: () => true } : {}) },
            resourceIndicators: {
                enabled: true,
                // No `resource` in the request: the token is for AS_DEFAULT_RESOURCE, or (unset) an
                // opaque token with no audience that mcpd must refuse.
                defaultResource: async (_ctx, _client, oneOf) => oneOf ?? (DEFAULT_RESOURCE || undefined),
                // A token request without `resource` gets the one the authorization request named.
                useGrantedResource: async () => true,
                getResourceServerInfo: async (_ctx, indicator) => {
                    if (!RESOURCES.includes(indicator)) throw new errors.InvalidTarget(`unknown resource ${indicator}`);
                    return resourceServerInfo(indicator);
                }
            }
        }
    });
    const log = (event, ctx, err) =>
        console.error(
            `authserver error ${event}: ${err?.name ?? ''} ${err?.message ?? err}${err?.error_description ? ` (${err.error_description})` : ''} [${ctx?.method ?? ''} ${ctx?.path ?? ''}]`
        );
    for (const event of [
        'server_error',
        'authorization.error',
        'grant.error',
        'registration_create.error',
        'introspection.error',
        'revocation.error',
        'jwks.error',
        'discovery.error'
    ]) {
        provider.on(event, (ctx, err) => log(event, ctx, err));
    }
    registerTokenExchange(provider);
    return provider;
}

// ---- RFC 8693 token exchange ---------------------------------------------------------------
const publicJwk = ({ d, p, q, dp, dq, qi, ...pub }) => pub;
async function subjectOf(provider, token) {
    if (token.split('.').length === 3) {
        const jwks = createLocalJWKSet({ keys: keys.map(publicJwk) });
        const { payload } = await jwtVerify(token, jwks, { issuer: provider.issuer, typ: 'at+jwt' });
        return payload;
    }
    const found = (await provider.AccessToken.find(token)) ?? (await provider.ClientCredentials.find(token));
    if (!found || found.isExpired) throw new Error('unknown or expired token');
    return { sub: found.accountId ?? found.clientId, scope: found.scope, aud: found.aud, exp: found.exp, cnf: found.jkt ? { jkt: found.jkt } : undefined };
}
function registerTokenExchange(provider) {
    const params = ['audience', 'resource', 'scope', 'requested_token_type', 'subject_token', 'subject_token_type', 'actor_token', 'actor_token_type'];
    provider.registerGrantType(
        TOKEN_EXCHANGE,
        async ctx => {
            const p = ctx.oidc.params;
            if (!p.subject_token) throw new errors.InvalidRequest('missing required parameter subject_token');
            if (![AT_TYPE, JWT_TYPE].includes(p.subject_token_type)) throw new errors.InvalidRequest(`unsupported subject_token_type ${p.subject_token_type}`);
            if (p.requested_token_type !== undefined && p.requested_token_type !== AT_TYPE) throw new errors.InvalidRequest('only access tokens are issued');
            if (p.actor_token !== undefined) throw new errors.InvalidRequest('actor_token is not supported');
            const targets = [p.resource, p.audience].flat().filter(v => v !== undefined);
            if (targets.length !== 1) throw new errors.InvalidTarget('name exactly one resource (or audience)');
            const [target] = targets;
            if (!RESOURCES.includes(target)) throw new errors.InvalidTarget(`unknown resource ${target}`);
            let subject;
            try {
                subject = await subjectOf(provider, p.subject_token);
            } catch (e) {
                throw new errors.InvalidGrant(`subject_token: ${e.message}`);
            }
            if (subject.cnf) throw new errors.InvalidGrant('subject_token is sender-constrained');
            const info = resourceServerInfo(target);
            const held = new Set(String(subject.scope ?? '').split(' ').filter(Boolean));
            const offered = new Set(info.scope.split(' '));
            const asked = p.scope ? p.scope.split(' ') : [...held];
            for (const s of asked) if (p.scope && !held.has(s)) throw new errors.InvalidScope('requested scope exceeds the subject token', s);
            const scope = asked.filter(s => offered.has(s)).join(' ') || undefined;
            const left = subject.exp - Math.floor(Date.now() / 1000);
            const token = new provider.AccessToken({
                accountId: subject.sub,
                client: ctx.oidc.client,
                scope,
                gty: 'token-exchange',
                expiresIn: Math.max(1, Math.min(info.accessTokenTTL, left))
            });
            token.resourceServer = new provider.ResourceServer(target, info);
            ctx.oidc.entity('AccessToken', token);
            const value = await token.save();
            ctx.body = { access_token: value, issued_token_type: AT_TYPE, token_type: token.tokenType, expires_in: token.expiration, ...(scope ? { scope } : {}) };
        },
        params,
        ['audience', 'resource']
    );
}

// ---- headless login + consent: the interaction finishes at once for ACCOUNT -----------------------
async function interaction(provider, req, res) {
    const details = await provider.interactionDetails(req, res);
    const { prompt, params, session } = details;
    if (prompt.name === 'login') {
        await provider.interactionFinished(req, res, { login: { accountId: ACCOUNT } }, { mergeWithLastSubmission: false });
        return;
    }
    if (prompt.name === 'consent') {
        const grant = details.grantId
            ? await provider.Grant.find(details.grantId)
            : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
        const d = prompt.details;
        if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
        if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
        for (const [indicator, scopes] of Object.entries(d.missingResourceScopes ?? {})) grant.addResourceScope(indicator, scopes.join(' '));
        const grantId = await grant.save();
        await provider.interactionFinished(req, res, { consent: details.grantId ? {} : { grantId } }, { mergeWithLastSubmission: true });
        return;
    }
    throw new Error(`unexpected interaction prompt ${prompt.name}`);
}

// ---- test-only endpoints ----------------------------------------------------------------------
let issuer;
let provider;
let handle; // provider.callback() of the current provider
function info() {
    const base = issuer.replace(/\/$/, '');
    return {
        issuer,
        jwks_uri: `${base}/jwks`,
        token_endpoint: `${base}/token`,
        introspection_endpoint: `${base}/token/introspection`,
        revocation_endpoint: `${base}/token/revocation`,
        registration_endpoint: `${base}/reg`,
        metadata: [`${base}/.well-known/oauth-authorization-server`, `${base}/.well-known/openid-configuration`],
        introspection_client: INTROSPECTOR,
        client_credentials_client: CC,
        token_exchange_client: TX,
        client_credentials_jwt_client: { client_id: CCJ.client_id, private_key_pem: CCJ.private_key_pem, alg: 'ES256' },
        resources: RESOURCES,
        scopes: SCOPES,
        token_format: TOKEN_FORMAT,
        opaque_resources: [...OPAQUE_RESOURCES],
        token_ttl: TOKEN_TTL,
        signing_alg: SIGNING_ALG,
        signing_kid: keys[0].kid,
        published_kids: keys.map(k => k.kid),
        dpop: DPOP,
        dpop_nonce: DPOP_NONCE,
        refresh_tokens: REFRESH,
        client_scope_cap: SCOPE_CAP,
        default_resource: DEFAULT_RESOURCE || null,
        account: ACCOUNT
    };
}

function rotateKeys(keepOld = ROTATE_KEEP_OLD) {
    const previous = keys[0].kid;
    const fresh = newSigningKey();
    keys = keepOld ? [fresh, ...keys] : [fresh];
    // oidc-provider reads its JWKS once, in the constructor: a new instance on the same store,
    // cookie keys and issuer takes over (sessions, grants, clients and tokens live in the store).
    provider = buildProvider(issuer);
    handle = provider.callback();
    console.error(`authserver rotated signing key ${previous} -> ${fresh.kid}${keepOld ? '' : ' (old keys dropped)'}`);
    return { previous_kid: previous, signing_kid: fresh.kid, published_kids: keys.map(k => k.kid) };
}

function sendJson(res, status, body) {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', 'content-length': Buffer.byteLength(text) });
    res.end(text);
}

const server = http.createServer(async (req, res) => {
    const current = provider;
    const currentHandle = handle;
    if (LOG) {
        const started = Date.now();
        res.on('finish', () => console.error(`authserver ${req.method} ${req.url} -> ${res.statusCode} (${Date.now() - started} ms)`));
    }
    try {
        const path = new URL(req.url, 'http://x').pathname;
        if (path.startsWith('/interaction/')) {
            await interaction(current, req, res);
            return;
        }
        if (TEST_ENDPOINTS && path === '/_test/info' && req.method === 'GET') {
            sendJson(res, 200, info());
            return;
        }
        if (TEST_ENDPOINTS && path === '/_test/rotate-keys' && req.method === 'POST') {
            const drop = new URL(req.url, 'http://x').searchParams.get('drop');
            sendJson(res, 200, rotateKeys(drop === null ? ROTATE_KEEP_OLD : !flag(drop, true)));
            return;
        }
        currentHandle(req, res);
    } catch (e) {
        console.error(`authserver error ${req.method} ${req.url}: ${e?.name ?? ''} ${e?.message ?? e}`);
        if (!res.headersSent) sendJson(res, 500, { error: 'server_error', error_description: String(e?.message ?? e) });
        else res.end();
    }
});

server.listen(PORT, HOST, () => {
    const { port } = server.address();
    const hostPart = HOST.includes(':') ? `[${HOST}]` : HOST;
    issuer = `http://${hostPart}:${port}${TRAILING_SLASH ? '/' : ''}`;
    provider = buildProvider(issuer);
    handle = provider.callback();
    console.error(`authserver info ${JSON.stringify(info())}`);
    console.log(`authserver listening on ${issuer}`);
});

process.on('SIGUSR2', () => {
    if (provider) rotateKeys();
});
for (const sig of ['SIGTERM', 'SIGINT']) {
    process.on(sig, () => {
        server.close();
        server.closeAllConnections?.();
        process.exit(0);
    });
}
