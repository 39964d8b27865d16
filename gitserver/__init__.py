"""Smart HTTP git serving (git http-backend under Starlette), auth, repo store, commit-back."""
