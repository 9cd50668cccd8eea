"""Where gridlab keeps what it produces, and how a file gets there: `store.Store` is the results object the other
packages hold (a folder, or an object-store prefix through its local copy: `remote`, which only this package
imports), `layout` names every folder and file of a results directory (no other module spells them), `atomic`
writes files and folders so that a process killed mid-write leaves the old version or the new one, never half of
one, and `models` is the trained-model store. Nothing here imports a layer above it."""
