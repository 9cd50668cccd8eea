"""The reproduction study: how far gridlab's runs reproduce the four papers. The papers' published numbers
(`published`, `published_data/`) and the original code's reruns (`reruns`), the sections that set them beside
ours (`sections/`, which plug into `gridlab.report`), the fidelity table and its pages (`fidelity`,
`verdicts`, `tolerances`, `ablations`, `fidelity_record`, `fidelity_text`, `fidelity_doc`,
`walltime`), the claims and their verdicts (`claims`, `conclusions`), and `gridlab report`'s composition of it
all (`report`). It sits above `gridlab.report`, which it imports; nothing below imports it."""
