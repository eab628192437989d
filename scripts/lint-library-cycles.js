// Fails on a cycle between libraries: libs/A → libs/B → … → libs/A. A library is its folder, so a subpath
// entry (`@cdp/store/chdb`, which resolves inside libs/store) counts as its library. The `no-cycles` rule
// of .dependency-cruiser.cjs checks files: every file can be acyclic while two libraries import each other.
// Run by `npm run lint:layers` on dependency-cruiser's JSON output.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** The library a path belongs to (`libs/store/src/chdb/x.ts` → `store`), or undefined outside libs/. */
export function libraryOf(path) {
  return /^libs\/([^/]+)\//.exec(path ?? '')?.[1];
}

/**
 * The library graph of dependency-cruiser's modules: for each library, the libraries its files import
 * (tests and test harnesses included, type-only imports too), each with one import that shows it.
 */
export function libraryGraph(modules) {
  const graph = new Map();
  for (const module of modules) {
    const from = libraryOf(module.source);
    if (from === undefined) continue;
    if (!graph.has(from)) graph.set(from, new Map());
    for (const dependency of module.dependencies ?? []) {
      const to = libraryOf(dependency.resolved);
      if (to === undefined || to === from || graph.get(from).has(to)) continue;
      graph.get(from).set(to, `${module.source} → ${dependency.resolved}`);
    }
  }
  return graph;
}

/** One cycle per strongly connected group of libraries (Tarjan), each as its path: [a, b, …, a]. */
export function libraryCycles(graph) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const groups = [];
  let next = 0;
  const visit = (library) => {
    index.set(library, next);
    low.set(library, next++);
    stack.push(library);
    onStack.add(library);
    for (const to of graph.get(library)?.keys() ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(library, Math.min(low.get(library), low.get(to)));
      } else if (onStack.has(to)) low.set(library, Math.min(low.get(library), index.get(to)));
    }
    if (low.get(library) !== index.get(library)) return;
    const group = [];
    let member;
    do {
      member = stack.pop();
      onStack.delete(member);
      group.push(member);
    } while (member !== library);
    if (group.length > 1) groups.push(group);
  };
  for (const library of [...graph.keys()].sort()) if (!index.has(library)) visit(library);
  return groups.map((group) => cycleThrough(graph, new Set(group), [...group].sort()[0]));
}

/** The shortest path from `start` back to itself inside one strongly connected group. */
function cycleThrough(graph, group, start) {
  const previous = new Map();
  const queue = [start];
  while (queue.length) {
    const library = queue.shift();
    for (const to of [...(graph.get(library)?.keys() ?? [])].sort()) {
      if (!group.has(to) || previous.has(to)) continue;
      previous.set(to, library);
      if (to === start) {
        const path = [];
        for (let at = library; at !== start; at = previous.get(at)) path.unshift(at);
        return [start, ...path, start];
      }
      queue.push(to);
    }
  }
  return [start, start];
}

/** The lines that explain a cycle: each step with an import that makes it. */
export function describeCycle(graph, cycle) {
  const steps = cycle.slice(1).map((to, i) => `  ${cycle[i]} → ${to}: ${graph.get(cycle[i]).get(to)}`);
  return [`library cycle: ${cycle.join(' → ')}`, ...steps].join('\n');
}

function main() {
  const cruise = (() => {
    try {
      return execFileSync(
        join(root, 'node_modules/.bin/depcruise'),
        ['libs', '--config', '.dependency-cruiser.cjs', '--output-type', 'json'],
        { cwd: root, encoding: 'utf8', maxBuffer: 1 << 28, stdio: ['ignore', 'pipe', 'inherit'] },
      );
    } catch (error) {
      // dependency-cruiser exits non-zero on a rule's violation; its own run in lint:layers reports those.
      if (typeof error.stdout === 'string' && error.stdout.startsWith('{')) return error.stdout;
      throw error;
    }
  })();
  const graph = libraryGraph(JSON.parse(cruise).modules);
  const cycles = libraryCycles(graph);
  for (const cycle of cycles) console.error(describeCycle(graph, cycle));
  if (cycles.length) {
    console.error(`\n✘ ${cycles.length} library-level cycle(s): cut each so that libraries depend one way.`);
    process.exit(1);
  }
  console.log(`✔ no library-level cycle (${graph.size} libraries)`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main();
