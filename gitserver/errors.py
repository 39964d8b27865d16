"""Errors of the git server; the HTTP app and the CLI turn them into messages.

GlossatorError                  (core.errors)
 └── GitServerError
      ├── RepositoryNameError   a name that is not allowed       (HTTP 400)
      ├── RepositoryNotFound    no such repository               (HTTP 404)
      ├── RepositoryExists      the name is taken                (HTTP 409)
      ├── PushUnderWay          a delete waited too long for a push  (HTTP 409)
      ├── BadRequest            a malformed request             (HTTP 400)
      ├── BodyTooLarge          a request body over the limit    (HTTP 413)
      └── BackendError          `git http-backend` misbehaved    (HTTP 502)
"""

from __future__ import annotations

from core.errors import GlossatorError


class GitServerError(GlossatorError):
    status = 500


class RepositoryNameError(GitServerError, ValueError):
    status = 400


class RepositoryNotFound(GitServerError):
    status = 404


class RepositoryExists(GitServerError):
    status = 409


class PushUnderWay(GitServerError):
    status = 409


class BadRequest(GitServerError):
    status = 400


class BodyTooLarge(GitServerError):
    status = 413


class BackendError(GitServerError):
    status = 502
