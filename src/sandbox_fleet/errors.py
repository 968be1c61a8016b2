"""The one error type users see: a bad input, reported in one line, exit status 2."""


class InputError(Exception):
    """A user-supplied file, row, key or option is unusable.

    The message names the file (or key) and what was expected; the CLI prints it
    on one line and exits with status 2, never with a traceback.

    A library function names its own parameters in backticks (`column_map`: unknown canonical
    name ...); the CLI shows each as the flag that sets it (--map: unknown canonical name ...).
    """

    exit_code = 2
