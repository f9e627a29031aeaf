// Tests of the lint rules of redocly/fleetcam.js: the rule's own logic,
// and the rule as redocly.yaml at the repository root loads it into the
// pinned Redocly CLI.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ambiguous, accepts } from './fleetcam.js';

const here = dirname(fileURLToPath(import.meta.url));

const imei = [{ type: 'string', pattern: '^[0-9]{15}$' }];
const p = (path, params = {}) => ({ path, params: new Map(Object.entries(params)) });

test('a literal facing a template is a conflict only when the parameter takes it', () => {
  const billing = p('/v2/devices/billing-status/{billingStatus}', { billingStatus: [{ type: 'string' }] });
  assert.equal(ambiguous(billing, p('/v2/devices/{imei}/events', { imei })), false);
  assert.equal(ambiguous(billing, p('/v2/devices/{imei}/events', { imei: [{ type: 'string' }] })), true);
  assert.equal(ambiguous(billing, p('/v2/devices/{imei}/events')), true, 'an undeclared parameter takes anything');
  const telemetry = p('/v2/devices/{imei}/{cameraId}/telemetry', { imei, cameraId: [{ type: 'integer' }] });
  assert.equal(ambiguous(telemetry, p('/v2/devices/{imei}/events/{eventId}', { imei, eventId: [{ type: 'integer' }] })), false);
});

test('paths of different lengths, literals or template counts do not conflict', () => {
  assert.equal(ambiguous(p('/v2/a/{x}'), p('/v2/a/{x}/b')), false);
  assert.equal(ambiguous(p('/v2/a/{x}'), p('/v2/b/{x}')), false);
  assert.equal(ambiguous(p('/v2/a/b'), p('/v2/a/{x}')), false, 'the literal path is the more specific');
  assert.equal(ambiguous(p('/v2/{x}/b'), p('/v2/{y}/b')), true);
});

test('a parameter takes a literal by its pattern, type, enum and const', () => {
  assert.equal(accepts(imei, '356000000000018'), true);
  assert.equal(accepts(imei, 'billing-status'), false);
  assert.equal(accepts([{ type: 'integer' }], '42'), true);
  assert.equal(accepts([{ type: 'integer' }], 'events'), false);
  assert.equal(accepts([{ type: 'number' }], '4.5'), true);
  assert.equal(accepts([{ type: ['integer', 'null'] }], 'x'), false);
  assert.equal(accepts([{ type: 'string', enum: ['video', 'snapshot'] }], 'video'), true);
  assert.equal(accepts([{ type: 'string', enum: ['video', 'snapshot'] }], 'audio'), false);
  assert.equal(accepts([{ const: 'on' }], 'off'), false);
  assert.equal(accepts([{ type: 'integer' }, { type: 'string' }], 'events'), true, 'any of its schemas');
  assert.equal(accepts([], 'anything'), true);
});

/** lint runs the pinned Redocly CLI with the repository's configuration. */
async function lint(doc) {
  const dir = await mkdtemp(join(tmpdir(), 'fleetcam-lint-'));
  try {
    const file = join(dir, 'openapi.json');
    await writeFile(file, JSON.stringify(doc));
    const cli = join(here, '..', 'node_modules', '.bin', 'redocly');
    const config = join(here, '..', '..', '..', 'redocly.yaml');
    const run = promisify(execFile)(cli, ['lint', file, '--config', config, '--format', 'json'], {
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    });
    const { stdout } = await run.catch((err) => err); // problems make it exit 1
    return JSON.parse(stdout).problems.map((x) => `${x.ruleId} ${x.message}`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function api(paths) {
  const op = { operationId: 'x', responses: { 200: { description: 'ok' } } };
  const items = {};
  let n = 0;
  for (const [path, params] of Object.entries(paths)) {
    items[path] = { parameters: params, get: { ...op, operationId: `op${n++}` } };
  }
  return { openapi: '3.1.0', info: { title: 't', version: '1' }, paths: items };
}

const param = (name, schema) => ({ in: 'path', name, required: true, schema });

test('redocly.yaml reports ambiguous paths with the rule of fleetcam.js', async () => {
  const problems = await lint(api({
    '/v2/devices/billing-status/{billingStatus}': [param('billingStatus', { type: 'string' })],
    '/v2/devices/{imei}/events': [param('imei', { type: 'string', pattern: '^[0-9]{15}$' })],
    '/v2/groups/all/{groupId}': [param('groupId', { type: 'string' })],
    '/v2/groups/{name}/devices': [param('name', { type: 'string' })],
  }));
  const ambiguity = problems.filter((x) => x.includes('ambiguous'));
  assert.deepEqual(ambiguity, [
    'fleetcam/no-ambiguous-paths Paths should resolve unambiguously. Found two ambiguous paths: `/v2/groups/all/{groupId}` and `/v2/groups/{name}/devices`.',
  ]);
});
