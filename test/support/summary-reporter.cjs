/**
 * Prints the run's totals as one plain line at the very end ("jest: N passed, N failed, N skipped"),
 * so a reader of the CI log, human or not, finds the verdict without parsing Jest's summary.
 */
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    process.stdout.write(
      `\njest: ${results.numPassedTests} passed, ${results.numFailedTests + results.numRuntimeErrorTestSuites} failed, ${skipped} skipped\n`,
    );
  }
}
module.exports = SummaryReporter;
