"""steward.futures' payload both ways (the runner's side in process, and as the script a host runs)
and the job file made of an executor's options."""

import os
import pickle
import subprocess
import sys
import tempfile
import textwrap
import unittest

from steward import _futures_runner as runner
from steward._futures_payload import (
    CALL_FILE,
    RESULT_FILE,
    RUNNER_FILE,
    RemoteError,
    RemoteTraceback,
    choose_pickler,
    chunks_of,
    outcomes_of_result,
    payload,
    runner_source,
)
from steward._futures_spec import DEFAULTS, call_name, job_spec, merged_options

PICKLE = choose_pickler(None)


class NeedsTwo(Exception):
    """Pickles, but does not unpickle: its __init__ wants two arguments, args holds one."""

    def __init__(self, first, second):
        super().__init__(f"{first} and {second}")


def divide(x, y):
    return x / y


def refuse_twice():
    raise NeedsTwo("a", "b")


def unpicklable():
    return (line for line in ())


def leave():
    raise SystemExit(3)


def round_trip(function, chunks, task=0, pickler=PICKLE):
    """The outcomes of task `task` as the client reads them: the payload unpickled by the runner,
    its calls made, the result pickled and read back."""
    data = pickle.loads(payload(function, chunks, pickler))
    result = pickle.dumps({"version": runner.VERSION, "outcomes": runner.outcomes_of(data, task)})
    return outcomes_of_result(result, len(chunks[task]))


class Calls(unittest.TestCase):
    def test_a_call_comes_back_as_its_value(self):
        [outcome] = round_trip(pow, [[((2, 10), {})]])
        self.assertIsNone(outcome.error)
        self.assertEqual(outcome.value, 1024)

    def test_each_task_makes_its_own_chunk_of_calls_in_order(self):
        chunks = chunks_of([((x, 2), {}) for x in range(5)], 2)
        self.assertEqual([len(chunk) for chunk in chunks], [2, 2, 1])
        self.assertEqual([o.value for o in round_trip(pow, chunks, task=1)], [4, 9])
        self.assertEqual([o.value for o in round_trip(pow, chunks, task=2)], [16])
        self.assertEqual([o.value for o in round_trip(int, [[(("ff",), {"base": 16})]])], [255])
        with self.assertRaises(ValueError):
            chunks_of([((1,), {})], 0)

    def test_an_exception_comes_back_as_itself_with_the_remote_traceback_as_its_cause(self):
        ok, failed = round_trip(divide, [[((1, 2), {}), ((1, 0), {})]])
        self.assertEqual(ok.value, 0.5)
        self.assertIsInstance(failed.error, ZeroDivisionError)
        cause = failed.error.__cause__
        self.assertIsInstance(cause, RemoteTraceback)
        self.assertIn("in divide", str(cause))
        self.assertIn("ZeroDivisionError: division by zero", str(cause))

    def test_an_exception_that_does_not_unpickle_comes_back_as_a_remote_error(self):
        [outcome] = round_trip(refuse_twice, [[((), {})]])
        self.assertIsInstance(outcome.error, RemoteError)
        self.assertEqual(outcome.error.type_name, f"{__name__}.NeedsTwo")
        self.assertEqual(outcome.error.message, "a and b")
        self.assertEqual(str(outcome.error), f"{__name__}.NeedsTwo: a and b")
        self.assertIn("in refuse_twice", outcome.error.traceback)
        self.assertIsInstance(outcome.error.__cause__, RemoteTraceback)

    def test_a_value_that_does_not_pickle_and_a_system_exit_are_the_calls_errors(self):
        [outcome] = round_trip(unpicklable, [[((), {})]])
        self.assertIsInstance(outcome.error, TypeError)
        self.assertIn("generator", str(outcome.error))
        [outcome] = round_trip(leave, [[((), {})]])
        self.assertIsInstance(outcome.error, SystemExit)
        self.assertEqual(outcome.error.code, 3)

    def test_a_result_that_is_not_the_runners_is_an_error_for_each_call(self):
        for data in (b"not a pickle", pickle.dumps({"version": runner.VERSION, "outcomes": [("ok", pickle.dumps(1))]})):
            outcomes = outcomes_of_result(data, 2)
            self.assertEqual(len(outcomes), 2)
            for outcome in outcomes:
                self.assertIsInstance(outcome.error, ValueError)
                self.assertIn("not the runner's", str(outcome.error))


class Picklers(unittest.TestCase):
    def test_the_standard_pickle_sends_functions_by_name_only(self):
        self.assertEqual(PICKLE[0], "pickle")
        with self.assertRaises((pickle.PicklingError, AttributeError)):
            payload(lambda x: x, [[((1,), {})]], PICKLE)
        self.assertEqual(pickle.loads(payload(pow, [[((1, 1), {})]], PICKLE))["pickler"], "pickle")

    def test_cloudpickle_when_given_pickles_lambdas(self):
        class Fake:
            @staticmethod
            def dumps(value):
                return pickle.dumps(42)

        name, dumps = choose_pickler(Fake)
        self.assertEqual(name, "cloudpickle")
        self.assertEqual(pickle.loads(dumps(lambda: 0)), 42)


class Runner(unittest.TestCase):
    def test_the_runner_stands_alone(self):
        source = runner_source().decode("utf-8")
        with open(runner.__file__, encoding="utf-8") as file:
            self.assertEqual(source, file.read())
        self.assertNotIn("steward", [line.split()[1].split(".")[0] for line in source.splitlines() if line.startswith(("import ", "from "))])
        compile(source, RUNNER_FILE, "exec")

    def test_a_host_runs_it_on_the_payload_of_its_task_and_writes_the_result(self):
        folder = tempfile.mkdtemp(prefix="steward-runner-")
        # A module the caller imports and the host does not have: the task's calls say so.
        module_dir = tempfile.mkdtemp(prefix="steward-module-")
        with open(os.path.join(module_dir, "only_here.py"), "w") as file:
            file.write(textwrap.dedent("def twice(x):\n    return 2 * x\n"))
        sys.path.insert(0, module_dir)
        try:
            import only_here

            missing = payload(only_here.twice, [[((1,), {})], [((2,), {}), ((3,), {})]], PICKLE)
        finally:
            sys.path.remove(module_dir)
            sys.modules.pop("only_here", None)
        with open(os.path.join(folder, RUNNER_FILE), "wb") as file:
            file.write(runner_source())
        env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "STEWARD_TASK_INDEX")}
        cases = [
            (payload(abs, [[((-1,), {})], [((-2,), {}), ((-3,), {})]], PICKLE), "1", [2, 3], None),
            (payload(abs, [[((-4,), {})]], PICKLE), None, [4], None),
            (missing, "1", None, ModuleNotFoundError),
        ]
        for data, task, values, error in cases:
            with self.subTest(task=task, error=error):
                with open(os.path.join(folder, CALL_FILE), "wb") as file:
                    file.write(data)
                run_env = dict(env, **({"STEWARD_TASK_INDEX": task} if task is not None else {}))
                done = subprocess.run(
                    [sys.executable, RUNNER_FILE, CALL_FILE, RESULT_FILE], cwd=folder, env=run_env, capture_output=True
                )
                self.assertEqual(done.returncode, 0, done.stderr)
                with open(os.path.join(folder, RESULT_FILE), "rb") as file:
                    outcomes = outcomes_of_result(file.read(), 2 if task == "1" else 1)
                if error is None:
                    self.assertEqual([o.value for o in outcomes], values)
                else:
                    self.assertEqual([type(o.error) for o in outcomes], [error, error])
                    self.assertIn("only_here", str(outcomes[0].error))
                self.assertEqual([name for name in os.listdir(folder) if name.endswith(".part")], [])


class Spec(unittest.TestCase):
    def test_a_call_is_the_runner_over_its_payload_with_the_result_as_output(self):
        spec = job_spec(DEFAULTS, "square", 1)
        self.assertEqual(
            spec,
            {
                "name": "square",
                "command": ["python3", RUNNER_FILE, CALL_FILE, RESULT_FILE],
                "inputs": [RUNNER_FILE, CALL_FILE],
                "outputs": [RESULT_FILE],
                "resources": {"cpus": 1},
            },
        )

    def test_the_options_go_to_their_keys_and_a_map_is_an_array(self):
        options = merged_options(
            DEFAULTS,
            {
                "cpus": 2,
                "memory_mb": 512,
                "gpus": 1,
                "time_limit": 60,
                "max_attempts": 3,
                "requirements": 'host.arch == "x86_64"',
                "qos": "high",
                "priority": 5,
                "env": {"PYTHONPATH": "/opt/lib"},
                "python": ["/opt/py/bin/python", "-X", "utf8"],
                "name": "named",
                "job": {"replicas": 2, "resources": {"custom": {"license": 1}}, "retry": {"backoffSeconds": 1}},
            },
        )
        spec = job_spec(options, "map square", 3)
        self.assertEqual(spec["name"], "named")
        self.assertEqual(spec["command"][:3], ["/opt/py/bin/python", "-X", "utf8"])
        self.assertEqual(spec["resources"], {"cpus": 2, "memoryMb": 512, "gpus": 1, "custom": {"license": 1}})
        self.assertEqual(spec["timeLimitSeconds"], 60)
        self.assertEqual(spec["retry"], {"maxAttempts": 3, "backoffSeconds": 1})
        self.assertEqual(spec["array"], {"count": 3})
        self.assertEqual((spec["requirements"], spec["qos"], spec["priority"], spec["replicas"]), ('host.arch == "x86_64"', "high", 5, 2))
        self.assertEqual(spec["env"], {"PYTHONPATH": "/opt/lib"})

    def test_an_unknown_option_or_no_interpreter_is_refused(self):
        with self.assertRaises(TypeError) as raised:
            merged_options(DEFAULTS, {"memory": 512})
        self.assertIn("unknown executor option memory", str(raised.exception))
        for python in ("", []):
            with self.assertRaises(ValueError):
                job_spec(merged_options(DEFAULTS, {"python": python}), "x", 1)

    def test_a_job_is_named_after_its_function(self):
        self.assertEqual(call_name(divide, mapped=False), "divide")
        self.assertEqual(call_name(lambda: 0, mapped=True), "map Spec.test_a_job_is_named_after_its_function.<locals>.<lambda>")
        self.assertEqual(call_name(NeedsTwo("a", "b"), mapped=False), "NeedsTwo")
        self.assertEqual(len(call_name(type("x" * 300, (), {}), mapped=False)), 200)


if __name__ == "__main__":
    unittest.main()
