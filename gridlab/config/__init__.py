"""What a grid file and a cell are (`schema`): pydantic models with every default, below everything that
reads a cell's config, so that models, training and analyses depend on the definition, not on the grid
machinery that expands files into cells."""
