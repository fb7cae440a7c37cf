"""One progress line on stderr for the long CLI commands (bench, train): a bar redrawn in place on a
terminal, plain lines otherwise (logs, CI); notes go on lines of their own."""

from __future__ import annotations

from typing import TextIO

BAR_CELLS = 20


class ProgressLine:
    def __init__(self, out: TextIO, note_prefix: str = "") -> None:
        self.out = out
        self.tty = bool(getattr(out, "isatty", lambda: False)())
        self.note_prefix = note_prefix
        self._open = False

    def show(self, line: str, done: int, total: int) -> None:
        """``[#####.....] line`` in place on a terminal; the line alone otherwise."""
        if self.tty:
            filled = round(BAR_CELLS * done / total) if total else BAR_CELLS
            self.out.write(f"\r\x1b[2K[{'#' * filled}{'.' * (BAR_CELLS - filled)}] {line}")
            self._open = True
        else:
            self.out.write(line + "\n")
        self.out.flush()

    def note(self, text: str) -> None:
        self.close()
        self.out.write(f"{self.note_prefix}{text}\n")
        self.out.flush()

    def close(self) -> None:
        if self._open:
            self.out.write("\n")
            self.out.flush()
            self._open = False
