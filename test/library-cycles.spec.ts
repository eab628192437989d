/**
 * The library-level cycle rule of `npm run lint:layers` (scripts/lint-library-cycles.js), on module
 * lists shaped as dependency-cruiser's JSON output writes them.
 */
interface Module {
  source: string;
  dependencies: { resolved: string }[];
}
type Graph = Map<string, Map<string, string>>;
interface LibraryCycles {
  libraryOf(path: string): string | undefined;
  libraryGraph(modules: Module[]): Graph;
  libraryCycles(graph: Graph): string[][];
  describeCycle(graph: Graph, cycle: string[]): string;
}

const script: string = new URL('../scripts/lint-library-cycles.js', import.meta.url).href;
const rule = (await import(script)) as LibraryCycles;

const module = (source: string, ...imports: string[]): Module => ({
  source,
  dependencies: imports.map((resolved) => ({ resolved })),
});

describe('library-level cycles', () => {
  it('names a file by its library, a subpath entry by the library it sits in', () => {
    expect(rule.libraryOf('libs/store/src/chdb/index.ts')).toBe('store');
    expect(rule.libraryOf('libs/http-api/src/schema/index.ts')).toBe('http-api');
    expect(rule.libraryOf('apps/cdp/src/cdp.module.ts')).toBeUndefined();
    expect(rule.libraryOf('node_modules/@nestjs/common/index.js')).toBeUndefined();
  });

  it('finds none where libraries depend one way, though files of one library import each other', () => {
    const graph = rule.libraryGraph([
      module('libs/http-api/src/a.ts', 'libs/http-api/src/b.ts', 'libs/records/src/index.ts'),
      module('libs/http-api/src/b.ts', 'libs/http-api/src/a.ts'),
      module('libs/loader/src/x.ts', 'libs/records/src/index.ts'),
      module('libs/records/src/index.ts', 'libs/domain/src/index.ts'),
      module('apps/cdp/src/cdp.module.ts', 'libs/http-api/src/a.ts', 'libs/loader/src/x.ts'),
    ]);
    expect(rule.libraryCycles(graph)).toEqual([]);
  });

  it('finds a cycle that no file-level rule sees, through a subpath entry', () => {
    // Every file is acyclic: http-api's module imports the console; the console imports a subpath of http-api.
    const graph = rule.libraryGraph([
      module('libs/http-api/src/http-api.module.ts', 'libs/console-api/src/index.ts'),
      module('libs/console-api/src/index.ts', 'libs/console-api/src/console-account.controller.ts'),
      module('libs/console-api/src/console-account.controller.ts', 'libs/http-api/src/schema/index.ts'),
      module('libs/http-api/src/schema/index.ts', 'libs/http-api/src/schema/schema.dto.ts'),
    ]);
    const cycles = rule.libraryCycles(graph);
    expect(cycles).toEqual([['console-api', 'http-api', 'console-api']]);
    expect(rule.describeCycle(graph, cycles[0] ?? [])).toContain(
      'console-api → http-api: libs/console-api/src/console-account.controller.ts → libs/http-api/src/schema/index.ts',
    );
  });

  it('finds a longer cycle once, as its shortest path', () => {
    const graph = rule.libraryGraph([
      module('libs/http-api/src/m.ts', 'libs/loader/src/index.ts'),
      module('libs/loader/src/index.ts', 'libs/records/src/index.ts'),
      module('libs/records/src/index.ts', 'libs/http-api/src/records/index.ts'),
      module('libs/domain/src/index.ts'),
    ]);
    expect(rule.libraryCycles(graph)).toEqual([['http-api', 'loader', 'records', 'http-api']]);
  });
});
