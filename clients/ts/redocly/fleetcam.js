// Lint rules of fleetcam's own, loaded by redocly.yaml at the repository
// root.
//
// fleetcam/no-ambiguous-paths replaces the built-in no-ambiguous-paths. The
// built-in rule calls two paths ambiguous when every literal segment of one
// lines up with a literal or a template of the other, so
// /v2/devices/billing-status/{billingStatus} and
// /v2/devices/{imei}/adas-calibration-images are reported although no
// request matches both: an IMEI is fifteen digits, never "billing-status".
// Both paths are the reference contract's and cannot change. This rule
// reports the same pairs except where a literal segment is not a value the
// template's parameter takes (its pattern, type, enum or const), so a new
// path that really is ambiguous is still reported.

/** The plugin: its id names the rules in redocly.yaml. */
export default function fleetcamRules() {
  return { id: 'fleetcam', rules: { oas3: { 'no-ambiguous-paths': NoAmbiguousPaths } } };
}

/** A template segment such as {imei}; the name is the first group. */
const template = /^\{(.+)\}$/;

/** NoAmbiguousPaths reports each path that a path before it makes ambiguous. */
export function NoAmbiguousPaths() {
  return {
    Paths(paths, { report, location, resolve }) {
      const seen = [];
      for (const path of Object.keys(paths)) {
        const params = pathParameters(paths[path], resolve);
        const other = seen.find((s) => ambiguous(s, { path, params }));
        if (other) {
          report({
            message: `Paths should resolve unambiguously. Found two ambiguous paths: \`${other.path}\` and \`${path}\`.`,
            location: location.child([path]).key(),
          });
        }
        seen.push({ path, params });
      }
    },
  };
}

/**
 * pathParameters maps each path parameter's name to the schemas it is given
 * in the path item and its operations, $refs resolved.
 */
function pathParameters(item, resolve) {
  const byName = new Map();
  const add = (list) => {
    for (const raw of list || []) {
      const p = resolve(raw).node;
      if (!p || p.in !== 'path') continue;
      const schema = p.schema ? resolve(p.schema).node : undefined;
      byName.set(p.name, [...(byName.get(p.name) || []), schema]);
    }
  };
  add(item.parameters);
  for (const [key, op] of Object.entries(item)) {
    if (key !== 'parameters' && op && typeof op === 'object') add(op.parameters);
  }
  return byName;
}

/**
 * ambiguous reports whether a request path could match both a and b, the
 * built-in rule's way (the same number of templates on both sides, literal
 * segments equal), except that a literal facing a template must be a value
 * of the template's parameter.
 */
export function ambiguous(a, b) {
  const sa = a.path.split('/');
  const sb = b.path.split('/');
  if (sa.length !== sb.length) return false;
  let va = 0;
  let vb = 0;
  for (let i = 0; i < sa.length; i++) {
    const ta = sa[i].match(template);
    const tb = sb[i].match(template);
    if (ta) va++;
    if (tb) vb++;
    if (ta && tb) continue;
    if (ta && !accepts(a.params.get(ta[1]), sb[i])) return false;
    if (tb && !accepts(b.params.get(tb[1]), sa[i])) return false;
    if (!ta && !tb && sa[i] !== sb[i]) return false;
  }
  return va === vb;
}

/**
 * accepts reports whether a parameter given the schemas could take the
 * literal segment; an undeclared parameter or one without a schema takes
 * anything.
 */
export function accepts(schemas, literal) {
  if (!schemas || schemas.length === 0) return true;
  return schemas.some((s) => schemaAccepts(s, literal));
}

function schemaAccepts(s, literal) {
  if (!s) return true;
  if (s.const !== undefined && String(s.const) !== literal) return false;
  if (Array.isArray(s.enum) && !s.enum.some((v) => String(v) === literal)) return false;
  if (s.pattern !== undefined && !new RegExp(s.pattern, 'u').test(literal)) return false;
  const types = s.type === undefined ? [] : [].concat(s.type);
  if (types.length > 0 && !types.some((t) => typeAccepts(t, literal))) return false;
  return true;
}

function typeAccepts(type, literal) {
  switch (type) {
    case 'integer':
      return /^-?[0-9]+$/.test(literal);
    case 'number':
      return literal.trim() !== '' && Number.isFinite(Number(literal));
    case 'boolean':
      return literal === 'true' || literal === 'false';
    case 'null':
      return false; // a path segment is never null
    default:
      return true;
  }
}
