"""The live trials table on stderr.

On a terminal the table is redrawn in place as trials start and end; anywhere else
(a pipe, a CI log) each change is one line, ``trial 3 SUCCEEDED accuracy=0.91 …``,
and the whole table is printed once at the end. ``quiet`` prints only the end.
"""

from __future__ import annotations

from typing import Sequence, TextIO

from .study import StudySpec
from .trials import TableLayout, Trial, best_trial, render_trial_line, render_trials_table

_UP_AND_CLEAR = "\033[{n}F\033[J"  # cursor up n lines to column 0, clear to the end of the screen


def is_terminal(stream: TextIO | None) -> bool:
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError):
        return False


class TrialsView:
    """Shows a study's trials as they change.

    Args:
        study: the study (metric, parameters).
        stream: where to write (None: nowhere).
        live: redraw in place (default: when ``stream`` is a terminal).
        quiet: only the final table.
    """

    def __init__(self, study: StudySpec, stream: TextIO | None, *, live: bool | None = None, quiet: bool = False) -> None:
        self.study = study
        self.stream = stream
        self.layout = TableLayout.of(study)
        self.live = is_terminal(stream) if live is None else live
        self.quiet = quiet
        self._drawn = 0
        self._seen: dict[str, str] = {}

    def _write(self, text: str) -> None:
        if self.stream is None:
            return
        try:
            self.stream.write(text)
            self.stream.flush()
        except (BrokenPipeError, ValueError):
            self.stream = None

    def note(self, text: str) -> None:
        """A line of news above the table (e.g. why fewer trials run than asked)."""
        if self.live and self._drawn:
            self._write(_UP_AND_CLEAR.format(n=self._drawn))
            self._drawn = 0
        self._write(f"tfjob: {text}\n")

    def update(self, trials: Sequence[Trial]) -> None:
        """Show what changed since the last update."""
        if self.quiet:
            return
        if self.live:
            table = render_trials_table(self.layout, trials)
            clear = _UP_AND_CLEAR.format(n=self._drawn) if self._drawn else ""
            self._write(clear + table + "\n")
            self._drawn = table.count("\n") + 1
            return
        for trial in trials:
            key = f"{trial.state}:{trial.metric}"
            if trial.state != "QUEUED" and self._seen.get(trial.id) != key:
                self._seen[trial.id] = key
                self._write(render_trial_line(self.layout, trial) + "\n")

    def finish(self, trials: Sequence[Trial], summary: str) -> None:
        """The final table, the study's outcome and its best trial."""
        if self.live and self._drawn:
            self._write(_UP_AND_CLEAR.format(n=self._drawn))
            self._drawn = 0
        best = best_trial(trials, self.study.metric.maximize)
        self._write(f"{render_trials_table(self.layout, trials, best)}\n{summary}\n")
