"""What the hand-off executors (``celery``, ``rq``, ``dramatiq``) share: a fire's identity at the
broker boundary (:mod:`.identity`), the node's store for the "previous hand-off not final" check
(:mod:`.nodes`), the executor base (:mod:`.executor`) and the worker-side reports
(:mod:`.reporter`). See docs/handoff.md.
"""
