"""The one error type users see: a bad input, reported in one line, exit status 2."""


class InputError(Exception):
    """A user-supplied file, row, key or option is unusable.

    The message names the file (or key) and what was expected; the CLI prints it
    on one line and exits with status 2, never with a traceback.

    A library function names its own parameters (``column_map: unknown canonical name ...``) and
    lists them in ``params``; the CLI shows each as the flag that sets it (``--map: ...``).
    """

    exit_code = 2

    def __init__(self, message: str = "", *, params: tuple[str, ...] = ()):
        super().__init__(message)
        #: parameter names the message mentions, each as a whole word (kept through pickling:
        #: the state dict travels with the arguments)
        self.params = params
