"""Errors for data a user points slide at."""


class DataFormatError(ValueError):
    """A data file is malformed. The message names the file, the 1-based line and what was expected."""

    def __init__(self, path, line: int, message: str) -> None:
        self.path, self.line = str(path), line
        super().__init__(f"{path}:{line}: {message}" if line else f"{path}: {message}")


class DatasetNotFoundError(FileNotFoundError):
    """The files of a named dataset are not where slide looked."""
