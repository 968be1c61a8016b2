"""The start-up peer (issue 12): a one-command Typer app that imports Pydantic and prints a line.

``bench_startup.py`` times whole processes of this against ``sandbox-fleet`` commands.
"""

from __future__ import annotations

import pydantic
import typer

app = typer.Typer(add_completion=False)


@app.command()
def main(path: str = typer.Argument("-")) -> None:
    """Print one line."""
    print(f"peer {path} pydantic {pydantic.VERSION}")


if __name__ == "__main__":
    app()
