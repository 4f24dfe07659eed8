"""Figure 6-1 of Thor's code-importing thesis, today: a Python client runs OO7's T1 against the
database a Java server holds, in every way it can reach it (oo7/fig61/README.md)."""
