"""What gridlab offers, declared without running anything: the analyses a grid may name, with their
parameters, scope and the cells they apply to (`analyses`), and which cell configurations the model zoo can
build (`compatibility`). Grid validation reads these; the code that computes analyses and builds models
lives in the layers above (`gridlab.analyses`, `gridlab.models`). No torch here: validation stays fast."""
