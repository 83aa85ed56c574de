"""An optimizer's loop at the other end of the split (docs/how-to/evolve-with-dspy.md): the
train pool's questions and the judge's diagnoses of the baseline's failures for the
optimizer, the validation pool seen only through the Ladder, test spent on purpose.

``loops.pools`` holds what every optimizer's glue needs and imports none of them;
``loops.dspy`` (extra ``dspy``) and ``loops.gepa`` (extra ``gepa``) wrap it."""
