"""The built-in provider plugins: each module has `register(providers)`, as a third
party's plugin does, and `glossator.providers.DEFAULT_PLUGINS` names them (llm's
`default_plugins`). A module imports its provider only in the factory, when a setting
chooses it, so loading the registry costs no SDK and no model."""
