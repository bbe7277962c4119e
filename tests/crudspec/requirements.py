"""runOnRequirements: whether a test file or test applies to the server under test.

Owns the facts about the deployment (version and topology asked of the server; authentication,
Atlas Serverless and client-side encryption as the runner sets them up) and the evaluation of
each requirement field, and the few tests this runner's driver or the one-member replica set
cannot run whatever the server does (RUNNER_LIMITS). A test that does not apply is reported with
the requirement (or limit) that excluded it. Not here: running anything.
"""
import importlib.util


def version_tuple(text):
    """"4.2.99" -> (4, 2, 99); missing components count as 0 ("4.2" == "4.2.0")."""
    parts = [int(p) for p in str(text).split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


class Deployment:
    """What runOnRequirements are evaluated against, learnt once from the internal client."""

    def __init__(self, client, auth=False, serverless=False):
        info = client.admin.command("buildInfo")
        hello = client.admin.command("hello")
        self.version_text = info["version"]
        self.version = version_tuple(info["version"].split("-")[0])
        if hello.get("msg") == "isdbgrid":
            self.topology = "sharded"
        elif "setName" in hello:
            self.topology = "replicaset"
        else:
            self.topology = "single"
        self.auth = auth
        self.serverless = serverless
        # CSFLE needs pymongocrypt (and crypt_shared or mongocryptd) in the driver.
        self.csfle = importlib.util.find_spec("pymongocrypt") is not None
        self._client = client
        self._parameters = {}

    def describe(self):
        return f"MongoDB {self.version_text} {self.topology}" + (" with auth" if self.auth else "")

    def _parameter(self, name):
        if name not in self._parameters:
            try:
                reply = self._client.admin.command({"getParameter": 1, name: 1})
                self._parameters[name] = ("ok", reply.get(name))
            except Exception as e:  # an unsupported parameter means "not equal"
                self._parameters[name] = ("error", str(e))
        return self._parameters[name]

    def unmet(self, requirement):
        """The first field of one runOnRequirement this deployment does not satisfy, as text;
        None when all are satisfied."""
        known = {"minServerVersion", "maxServerVersion", "topologies", "serverless",
                 "serverParameters", "auth", "authMechanism", "csfle"}
        unknown = set(requirement) - known
        if unknown:
            raise ValueError(f"unknown runOnRequirement fields {sorted(unknown)}")
        if "minServerVersion" in requirement:
            if self.version < version_tuple(requirement["minServerVersion"]):
                return f"minServerVersion {requirement['minServerVersion']}"
        if "maxServerVersion" in requirement:
            if self.version > version_tuple(requirement["maxServerVersion"]):
                return f"maxServerVersion {requirement['maxServerVersion']}"
        if "topologies" in requirement:
            wanted = requirement["topologies"]
            if self.topology not in wanted and not (
                self.topology == "sharded" and "sharded-replicaset" in wanted
            ):
                return "topologies " + ",".join(wanted)
        serverless = requirement.get("serverless", "allow")
        if serverless == "require" and not self.serverless:
            return "serverless require"
        if serverless == "forbid" and self.serverless:
            return "serverless forbid"
        for name, value in requirement.get("serverParameters", {}).items():
            status, actual = self._parameter(name)
            if status != "ok" or not _equal(value, actual):
                return f"serverParameters {name}={value!r}"
        if "auth" in requirement and requirement["auth"] != self.auth:
            return f"auth {str(requirement['auth']).lower()}"
        if "authMechanism" in requirement:
            status, mechanisms = self._parameter("authenticationMechanisms")
            wanted = requirement["authMechanism"].lower()
            if status != "ok" or wanted not in [m.lower() for m in mechanisms or []]:
                return f"authMechanism {requirement['authMechanism']}"
        if "csfle" in requirement and requirement["csfle"] != self.csfle:
            return f"csfle {str(requirement['csfle']).lower()}"
        return None

    def unmet_any(self, requirements):
        """None when the list is empty or one of its requirements is met; otherwise the reasons
        each failed, joined (e.g. "minServerVersion 8.0")."""
        if not requirements:
            return None
        reasons = []
        for requirement in requirements:
            reason = self.unmet(requirement)
            if reason is None:
                return None
            reasons.append(reason)
        return " or ".join(dict.fromkeys(reasons))


def _equal(expected, actual):
    numbers = (int, float)
    if isinstance(expected, numbers) and isinstance(actual, numbers):
        if isinstance(expected, bool) or isinstance(actual, bool):
            return expected is actual
        return expected == actual
    return type(expected) is type(actual) and expected == actual


# (suite, operation name) -> why no test running that operation can be run here.
OPERATION_LIMITS = {
    ("retryable-reads", "count"): "pymongo has no count() helper to retry (count runs as a plain "
                                  "command, which drivers never retry)",
}
# (suite, file, test) -> why that test cannot be run here.
TEST_LIMITS = {
    ("transactions", "run-command.json",
     "run command fails with explicit secondary read preference"):
        "needs a secondary: pymongo selects one before it checks the transaction's read preference",
    ("transactions", "run-command.json",
     "run command fails with secondary read preference from transaction options"):
        "needs a secondary: pymongo selects one before it checks the transaction's read preference",
}
for _file, _test in [
    ("read-pref.json", "secondary readPreference"),
    ("transaction-options.json", "readPreference inherited from client"),
    ("transaction-options.json", "readPreference inherited from defaultTransactionOptions"),
    ("transaction-options.json", "startTransaction overrides readPreference"),
]:
    TEST_LIMITS[("transactions", _file, _test)] = (
        "needs a secondary: pymongo selects one before it checks the transaction's read preference"
    )


def runner_limit(suite, file_name, test):
    """Why this runner (pymongo against one server) cannot run the test, or None."""
    reason = TEST_LIMITS.get((suite, file_name, test["description"]))
    if reason:
        return reason
    pending = list(test["operations"])
    while pending:
        op = pending.pop()
        reason = OPERATION_LIMITS.get((suite, op["name"]))
        if reason:
            return reason
        pending.extend(op.get("arguments", {}).get("callback", []))
    return None
