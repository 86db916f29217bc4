"""The local cluster's certificates: one CA signs the apiserver's serving certificate, the clients' certificates
(admin, the apiserver as kubelet's client, each real node as system:node:NAME) and each kubelet's serving
certificate. A second CA, the front proxy's, signs only the certificate the apiserver's aggregation layer presents
to an aggregated API server (metrics-server): such a server believes the user named in that request's headers, so
the CA that vouches for it must vouch for nothing else (as kubeadm keeps it apart).

Each file is made once, when missing; the apiserver's is remade when the addresses it must carry change.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

DAYS = "3650"


class PKIError(RuntimeError):
    """openssl is missing or refused; the message has its answer."""


def openssl(*args: str, cwd: Path) -> None:
    result = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise PKIError(f"openssl {' '.join(args[:2])} failed: {result.stderr.strip()}")


# The front proxy's client certificate, and the one name the apiserver tells aggregated API servers to accept.
FRONT_PROXY_CA, FRONT_PROXY_CLIENT = "front-proxy-ca", "front-proxy-client"
CLIENT_EXT = "extendedKeyUsage=clientAuth\n"


def _signed(pki: Path, name: str, subject: str, ext: str, ca: str = "ca") -> None:
    """A key and a certificate `name` for `subject`, signed by the CA `ca`, with the extensions in `ext`."""
    (pki / f"{name}.ext").write_text(ext)
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
            "-subj", subject, cwd=pki)
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key", "-CAcreateserial",
            "-out", f"{name}.crt", "-days", DAYS, "-extfile", f"{name}.ext", cwd=pki)


def _ca(pki: Path, name: str, common_name: str) -> None:
    if not (pki / f"{name}.crt").exists():
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.crt",
                "-days", DAYS, "-subj", f"/CN={common_name}", cwd=pki)


def ensure_signed(pki: Path, name: str, subject: str, ext: str, ca: str = "ca") -> None:
    """`name`.crt and .key signed by `ca`, made when missing and remade when `ext` (its addresses, say) changed."""
    current = pki / f"{name}.ext"
    if not (pki / f"{name}.crt").exists() or (current.exists() and current.read_text() != ext):
        _signed(pki, name, subject, ext, ca)


def make_pki(pki: Path, api_service_ip: str, nodes: dict[str, str]) -> None:
    """Everything the control plane and the real nodes (`nodes`: name -> IP) need; a node's pair is made when the
    node is first asked for."""
    if shutil.which("openssl") is None:
        raise PKIError("openssl is needed to make the cluster's certificates; install it (apt-get install openssl)")
    pki.mkdir(parents=True, exist_ok=True)
    _ca(pki, "ca", "tfop-local-ca")
    _ca(pki, FRONT_PROXY_CA, "tfop-local-front-proxy-ca")
    # client.ext is also read by hack/bench for its operator's certificate.
    client = CLIENT_EXT
    (pki / "client.ext").write_text(client)
    apiserver_ext = ("subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
                     "DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,"
                     f"IP:{api_service_ip}\nextendedKeyUsage=serverAuth\n")
    wanted = {
        "apiserver": ("/CN=kube-apiserver", apiserver_ext),
        "admin": ("/O=system:masters/CN=tfop-admin", client),
        # The apiserver's identity towards kubelet (logs, exec): kubelet authorizes every authenticated client.
        "kubelet-client": ("/O=system:masters/CN=kube-apiserver-kubelet-client", client),
    }
    for node_name, node_ip in nodes.items():
        # kubelet's identity towards the apiserver; RBAC binds the system:node ClusterRole to this user.
        wanted[f"node-{node_name}"] = (f"/O=system:nodes/CN=system:node:{node_name}", client)
        wanted[f"kubelet-serving-{node_name}"] = (
            f"/CN={node_name}", f"subjectAltName=IP:{node_ip},DNS:{node_name}\nextendedKeyUsage=serverAuth\n")
    for name, (subject, ext) in wanted.items():
        ensure_signed(pki, name, subject, ext)
    ensure_signed(pki, FRONT_PROXY_CLIENT, f"/CN={FRONT_PROXY_CLIENT}", client, FRONT_PROXY_CA)
    if not (pki / "sa.key").exists():
        openssl("genrsa", "-out", "sa.key", "2048", cwd=pki)
        openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)


def kubeconfig(server: str, pki: Path, cert: str, user: str = "tfop-admin", cluster: str = "tfop-local") -> str:
    """A kubeconfig for the client certificate `cert` (admin: the one `up` prints, which kubectl, tests and `make
    run` use; node-NAME: a kubelet's)."""
    return f"""apiVersion: v1
kind: Config
clusters:
- name: {cluster}
  cluster:
    server: {server}
    certificate-authority: {pki / 'ca.crt'}
users:
- name: {user}
  user:
    client-certificate: {pki / f'{cert}.crt'}
    client-key: {pki / f'{cert}.key'}
contexts:
- name: {cluster}
  context: {{cluster: {cluster}, user: {user}}}
current-context: {cluster}
"""
