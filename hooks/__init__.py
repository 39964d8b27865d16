"""The path of a push, one module per step (docs/architecture.md walks it):

receive   refupdates       git's `<old> <new> <ref>` lines
          pre_receive      before refs move: refuse a tree the indexer could not use (gitsource)
          post_receive     after: HEAD settled (heads), tips recorded, each branch's job queued
queue     queue            defer with one waiting and one running job per branch; the jobs listed
          job_runner       JobRunner: the worker process's procrastinate app and task
          attempt          one attempt: recorded (runs), judged, followed up (retries)
          maintenance      stalled jobs, lost outcomes, reconciliation
job       job              BranchIndexer against the protocols Indexer, Loader, CommitBack
          reuse            the Indexer: indexer.indexing.run.index, what it computed kept
          commitback       the CommitBack: a commit on the tip, the branch moved by CAS
          loading          the Loader: the rows and the indexed commit in one transaction
          landing          rows before vectors: early rows, vectors slice by slice, resumed
"""
