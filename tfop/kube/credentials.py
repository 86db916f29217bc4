"""Credentials from a kubeconfig or a pod's service account, by the kubernetes package's own loaders, without its
generated API client.

What callers may rely on: the same behaviour as `kubernetes.config.load_kube_config` / `load_incluster_config`
(contexts, exec credential plugins re-run when their credential expires, auth providers, a rotated service
account token re-read within a minute), and a `Configuration` plus a urllib3 transport built from it by the
package's `RESTClientObject` (TLS, client certificates, proxies as the package sets them).

Why not `import kubernetes.config`: importing any part of the package runs `kubernetes/__init__.py`, which imports
`kubernetes.client` (hundreds of generated API and model classes, and pydantic under them), watch, stream, dynamic
and more, about 14 MB of a process that only needs four small modules. So the packages `kubernetes`,
`kubernetes.client` and `kubernetes.utils` are registered here as shells: module objects whose `__init__` has not
run, so their submodules (`client.configuration`, `client.rest`, `config.kube_config`, `utils.keepalive`) import
on their own. A shell is not a half-broken package: the first time anyone reads a name only its `__init__` defines
(`kubernetes.client.CoreV1Api`, `kubernetes.watch`), that `__init__` runs in it and the name is there, so other
code in the process that uses the whole package still gets it. If the package was imported before us, it is used
as it is.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.machinery
import importlib.util
import os
import sys
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import Any


def _shell(name: str) -> ModuleType:
    """The package `name` from sys.modules, else registered without running its __init__, which runs (in the same
    module object) the first time a name is read that the module does not have yet."""
    existing = sys.modules.get(name)
    if existing is not None:
        return existing
    parent, _, child = name.rpartition(".")
    search = sys.modules[parent].__path__ if parent else None
    spec = importlib.machinery.PathFinder.find_spec(name, search)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        raise ImportError(f"no package {name}", name=name)
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader
    lock = threading.RLock()  # its __init__ may read a name of its own while it runs
    completed = threading.Event()

    def complete(attribute: str) -> Any:
        with lock:
            if not completed.is_set():
                completed.set()
                del module.__dict__["__getattr__"]
                loader.exec_module(module)
        return getattr(module, attribute)

    module.__dict__["__getattr__"] = complete
    sys.modules[name] = module
    if parent:
        setattr(sys.modules[parent], child, module)
    return module


def _on_demand(module: str, name: str) -> type:
    """A class standing in for `module.name`: calling it imports `module` then and returns what the real one
    returns."""

    def build(cls: type, *args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    return type(name, (), {"__new__": build, "__doc__": f"{module}.{name}, imported when first called",
                           "__module__": __name__})


@contextlib.contextmanager
def _standing_in(package: ModuleType, name: str, stand_in: type) -> Iterator[None]:
    """While a module that does `from package import name` at its top is imported, the name is `stand_in` if the
    package is a shell; afterwards the package's own name is what everyone else reads."""
    placed = name not in package.__dict__ and "__getattr__" in package.__dict__
    if placed:
        package.__dict__[name] = stand_in
    try:
        yield
    finally:
        if placed and package.__dict__.get(name) is stand_in:
            del package.__dict__[name]


def _load_modules() -> tuple[ModuleType, ModuleType, ModuleType, ModuleType]:
    """(kube_config, incluster_config, configuration, rest) modules of the kubernetes package."""
    _shell("kubernetes")
    client = _shell("kubernetes.client")
    _shell("kubernetes.utils")  # rest imports two small modules of it; its __init__ imports the client
    configuration = importlib.import_module("kubernetes.client.configuration")
    if "Configuration" not in client.__dict__:  # the class itself, as the package's __init__ would name it
        client.__dict__["Configuration"] = configuration.Configuration
    rest = importlib.import_module("kubernetes.client.rest")
    # kube_config imports ApiClient (the generated code and pydantic under it) and the OAuth libraries (requests
    # under them) at its top, and uses them only to refresh an OIDC token: they are imported when that happens.
    _shell("oauthlib")
    _shell("oauthlib.oauth2")
    oauth = _shell("requests_oauthlib")
    with (_standing_in(client, "ApiClient", _on_demand("kubernetes.client.api_client", "ApiClient")),
          _standing_in(oauth, "OAuth2Session", _on_demand("requests_oauthlib.oauth2_session", "OAuth2Session"))):
        kube_config = importlib.import_module("kubernetes.config.kube_config")
    incluster = importlib.import_module("kubernetes.config.incluster_config")
    return kube_config, incluster, configuration, rest


_kube_config, _incluster, _configuration, _rest = _load_modules()

ConfigException: type[Exception] = importlib.import_module("kubernetes.config.config_exception").ConfigException
Configuration: Any = _configuration.Configuration
RESTClientObject: Any = _rest.RESTClientObject

SERVICE_TOKEN_FILE = _incluster.SERVICE_TOKEN_FILENAME
SERVICE_CA_FILE = _incluster.SERVICE_CERT_FILENAME


def from_kubeconfig(path: str | None = None, context: str | None = None) -> Any:
    """A Configuration from a kubeconfig file (None: $KUBECONFIG or ~/.kube/config) and `context` (None: its
    current-context). Raises ConfigException when the file or context cannot be used."""
    configuration = Configuration()
    _kube_config.load_kube_config(config_file=path, context=context, client_configuration=configuration,
                                  persist_config=False)
    return configuration


def in_cluster(token_file: str = SERVICE_TOKEN_FILE, ca_file: str = SERVICE_CA_FILE,
               environ: dict[str, str] | None = None) -> Any:
    """A Configuration from a pod's service account: the apiserver from $KUBERNETES_SERVICE_HOST/_PORT, the token
    file re-read once a minute so a rotated token is picked up. Raises ConfigException outside a pod."""
    configuration = Configuration()
    loader = _incluster.InClusterConfigLoader(token_filename=token_file, cert_filename=ca_file,
                                              environ=os.environ if environ is None else environ)
    loader.load_and_set(configuration)
    return configuration


def bearer_token(configuration: Any) -> str | None:
    """The Authorization header's value, refreshed first if the credential rotates (exec plugin, token file)."""
    value: str | None = configuration.get_api_key_with_prefix("BearerToken", alias="authorization")
    return value
