"""Data shipped inside the package (each folder with its SOURCE.md): what the README's first command needs,
so that it runs with no data folder and no network."""

from pathlib import Path

EMBEDDED_DATA = Path(__file__).parent
