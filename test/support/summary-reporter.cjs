/**
 * Prints the run's totals as one plain line at the very end ("jest: N passed, N failed, N skipped"),
 * so a reader of the CI log, human or not, finds the verdict without parsing Jest's summary. Above it, the
 * ten slowest suites, because the CI run has a time budget and this is where it goes.
 */
const { relative } = require('node:path');

class SummaryReporter {
  onRunComplete(_contexts, results) {
    const slowest = results.testResults
      .map((r) => ({
        path: relative(process.cwd(), r.testFilePath),
        s: (r.perfStats.end - r.perfStats.start) / 1000,
      }))
      .sort((a, b) => b.s - a.s)
      .slice(0, 10);
    if (slowest.length > 1) {
      process.stdout.write('\nslowest suites:\n');
      for (const { path, s } of slowest) process.stdout.write(`  ${s.toFixed(1).padStart(7)} s  ${path}\n`);
    }
    const skipped = results.numPendingTests + results.numTodoTests;
    process.stdout.write(
      `\njest: ${results.numPassedTests} passed, ${results.numFailedTests + results.numRuntimeErrorTestSuites} failed, ${skipped} skipped\n`,
    );
  }
}
module.exports = SummaryReporter;
