// The verdict on one scenario, from the checks.json the suite wrote for it
// (an array of checks, each with id, status, description, errorMessage).
//
//   node verdict.mjs CHECKS_JSON STRICT
//
// STRICT=1 counts WARNING checks as failures, like FAILURE ones; otherwise only
// FAILURE fails (as in the suite itself). SUCCESS, INFO and SKIPPED never fail
// by themselves, but a scenario with no SUCCESS check besides the wire-schema
// one (everything SKIPPED/INFO, as when the server does not offer the
// extension the scenario tests) verified nothing, and fails, in every mode.
//
// stdout, line 1: `PASS`, or `FAIL<TAB><first failing check: id: message>`
// (with "(+N more failing checks)"), or `FAIL<TAB>nothing was verified ...`;
// then `WARN<TAB>...` for every WARNING check. run.sh shows the WARN lines on
// stderr; they are never counted.
import { readFileSync } from 'node:fs';

const [file, strict] = process.argv.slice(2);
let checks;
try {
  checks = JSON.parse(readFileSync(file, 'utf8'));
} catch (e) {
  console.log(`FAIL\tunreadable checks.json: ${e.message}`);
  process.exit(0);
}

const oneLine = (s) => String(s).replace(/\s+/g, ' ').trim().slice(0, 400);
const what = (c) => oneLine(`${c.id}: ${c.errorMessage || c.description}`);

const failures = checks.filter((c) => c.status === 'FAILURE');
const warnings = checks.filter((c) => c.status === 'WARNING');
const bad = strict === '1' ? failures.concat(warnings) : failures;

const verified = checks.some((c) => c.status === 'SUCCESS' && c.id !== 'wire-schema-valid');
if (bad.length) {
  const more = bad.length > 1 ? ` (+${bad.length - 1} more failing checks)` : '';
  console.log(`FAIL\t${what(bad[0])}${more}`);
} else if (!verified) {
  const counts = {};
  for (const c of checks) counts[c.status] = (counts[c.status] || 0) + 1;
  const tally = Object.entries(counts).map(([s, n]) => `${n} ${s}`).join(', ') || 'no checks';
  console.log(`FAIL\tnothing was verified: no SUCCESS check besides wire-schema-valid (${tally})`);
} else {
  console.log('PASS');
}
for (const w of warnings) console.log(`WARN\t${what(w)}`);
