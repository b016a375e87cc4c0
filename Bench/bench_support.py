"""What several Bench/*.py scripts need alike, in one place: an HTTPS session that trusts
the stack's CA, a back-office session signed in through the login form, a percentile of a
sample, the median wall time of a call. The scripts import it from Bench/ (their own
folder, first on sys.path when run as `python3 Bench/x.py`)."""

import re
import statistics
import time

import requests


def https_session(ca):
    """A requests session that trusts `ca`, the stack's own CA. trust_env off: a
    REQUESTS_CA_BUNDLE in the environment would win over `verify` otherwise."""
    s = requests.Session()
    s.trust_env = False
    s.verify = ca
    return s


def signed_in(url, ca, email, password="tideway-demo"):
    """A back-office session of `email`, signed in through /login with its CSRF token."""
    s = https_session(ca)
    page = s.get(url + "/login")
    page.raise_for_status()
    csrf = re.search(r'name="_csrf" value="([^"]*)"', page.text).group(1)
    s.post(url + "/login", data={"_csrf": csrf, "email": email, "password": password},
           allow_redirects=False).raise_for_status()
    return s


def pct(values, q):
    """The q-quantile (0 < q < 1) of `values` by nearest rank: the value at index
    int(n * q) of the sorted sample, the last one at most; nan for an empty sample."""
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * q))] if values else float("nan")


def median_time(fn, runs):
    """Median seconds of `runs` calls of fn(), one after another."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
