"""The model zoo: encoders, alignments, projections and architectures behind encode/attend/decode.
`gridlab.models.factory.build_model` turns a resolved cell config into a model."""
