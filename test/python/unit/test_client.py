"""The client's pieces that need no Steward server: the redirect rule against small HTTP servers
on loopback, server lists, errors, multipart bodies, server-sent events, Link headers, and the
requests that name many jobs split in runs of 1000."""

import http.server
import io
import json
import socket
import threading
import unittest

import steward
from steward import _api_values, _events, _http, _job_files, _many_jobs, client


class Handler(http.server.BaseHTTPRequestHandler):
    """Answers what the test put in `routes` for a path: (status, headers, body)."""

    def do_GET(self):
        self.answer()

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.server.bodies.append(self.rfile.read(length))
        self.answer()

    def answer(self):
        self.server.seen.append((self.path, self.headers.get("Authorization")))
        self.server.headers_seen.append(dict(self.headers))
        status, headers, body = self.server.routes.get(self.path, (404, {}, b'{"error":{"code":"not_found","message":"no"}}'))
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def serve():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.routes, server.seen, server.bodies, server.headers_seen = {}, [], [], []
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def closed_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Redirects(unittest.TestCase):
    def setUp(self):
        self.standby, self.standby_url = serve()
        self.leader, self.leader_url = serve()
        self.stranger, self.stranger_url = serve()
        for server in (self.standby, self.leader, self.stranger):
            self.addCleanup(server.shutdown)
            self.addCleanup(server.server_close)
        ok = (200, {"Content-Type": "application/json"}, b'{"id": "7"}')
        self.leader.routes["/api/v1/jobs/7?tasks=1&events=1"] = ok
        self.stranger.routes["/api/v1/jobs/7?tasks=1&events=1"] = ok

    def test_a_redirect_to_a_listed_server_is_followed_with_the_token(self):
        self.standby.routes["/api/v1/jobs/7?tasks=1&events=1"] = (
            307,
            {"Location": self.leader_url + "/api/v1/jobs/7?tasks=1&events=1"},
            b"",
        )
        steward_client = steward.Client([self.standby_url, self.leader_url], "sta_secret")
        self.assertEqual(steward_client.job("7"), {"id": "7"})
        self.assertEqual(self.leader.seen, [("/api/v1/jobs/7?tasks=1&events=1", "Bearer sta_secret")])

    def test_a_redirect_elsewhere_is_refused_and_nothing_is_sent_there(self):
        self.standby.routes["/api/v1/jobs/7?tasks=1&events=1"] = (
            307,
            {"Location": self.stranger_url + "/api/v1/jobs/7?tasks=1&events=1"},
            b"",
        )
        steward_client = steward.Client(self.standby_url, "sta_secret", retry_seconds=1)
        with self.assertRaises(steward.RedirectRefused) as raised:
            steward_client.job("7")
        self.assertIn(f"refusing to follow a redirect to {self.stranger_url}/api/v1/jobs/7", str(raised.exception))
        self.assertIn("not one of the servers given", str(raised.exception))
        self.assertEqual(self.stranger.seen, [])

    def test_https_to_http_is_refused_even_to_a_listed_server(self):
        refusal = _http.redirect_refusal("https://a:4780/api/v1/jobs", "http://a:4780/api/v1/jobs", {"http://a:4780"})
        self.assertEqual(refusal, "it leaves HTTPS for plain HTTP")
        self.assertIsNone(_http.redirect_refusal("http://a:4780/x", "http://b:4780/x", {"http://b:4780"}))
        self.assertIsNone(_http.redirect_refusal("http://a/x", "http://a:80/y", set()))
        self.assertIsNotNone(_http.redirect_refusal("http://a:4780/x", "http://a:4781/x", {"http://a:4780"}))

    def test_a_server_that_refuses_connections_is_passed_for_the_next(self):
        dead = f"http://127.0.0.1:{closed_port()}"
        steward_client = steward.Client(f"{dead},{self.leader_url}", "t")
        self.assertEqual(steward_client.job("7"), {"id": "7"})

    def test_no_server_answering_is_unreachable(self):
        steward_client = steward.Client(f"http://127.0.0.1:{closed_port()}", "t", retry_seconds=0.3)
        with self.assertRaises(steward.Unreachable) as raised:
            steward_client.job("7")
        self.assertIn("cannot reach the Steward server", str(raised.exception))


class Versions(unittest.TestCase):
    def setUp(self):
        self.server, self.url = serve()
        self.addCleanup(self.server.shutdown)
        self.addCleanup(self.server.server_close)

    def test_a_server_of_another_api_version_is_refused_naming_both(self):
        self.server.routes["/api/v1/jobs/7?tasks=1&events=1"] = (
            200,
            {"Content-Type": "application/json", "Steward-Api-Version": "2", "Steward-Release": "9.0.0"},
            b'{"id": "7"}',
        )
        with self.assertRaises(steward.IncompatibleServer) as raised:
            steward.Client(self.url, "t").job("7")
        message = str(raised.exception)
        self.assertIn("speaks API version 2 (steward 9.0.0)", message)
        self.assertIn(f"this client speaks API version 1 (steward {steward.__version__})", message)

    def test_each_request_names_the_clients_api_version_and_release(self):
        self.server.routes["/api/v1/jobs/7?tasks=1&events=1"] = (
            200,
            {"Content-Type": "application/json", "Steward-Api-Version": "1"},
            b'{"id": "7"}',
        )
        self.assertEqual(steward.Client(self.url, "t").job("7"), {"id": "7"})
        self.assertEqual(self.server.headers_seen[-1]["Steward-Api-Version"], "1")
        self.assertEqual(self.server.headers_seen[-1]["Steward-Release"], steward.__version__)


class Errors(unittest.TestCase):
    def test_each_status_has_its_class_with_the_apis_message_and_code(self):
        body = json.dumps({"error": {"code": "invalid", "field": "command", "message": "command: required"}})
        error = steward.errors.error_for(400, body.encode())
        self.assertIsInstance(error, steward.Invalid)
        self.assertEqual((error.message, error.code, error.field, error.status), ("command: required", "invalid", "command", 400))
        cases = {401: steward.Unauthorized, 403: steward.Forbidden, 404: steward.NotFound, 409: steward.Conflict,
                 413: steward.TooLarge, 429: steward.RateLimited, 500: steward.ServerError, 503: steward.ServerError}
        for status, kind in cases.items():
            error = steward.errors.error_for(status, b"<html>a proxy</html>", "2")
            self.assertIsInstance(error, kind)
            self.assertIsInstance(error, steward.StewardError)
            self.assertEqual(error.message, f"HTTP {status}")
        self.assertEqual(steward.errors.error_for(429, b"{}", "2").retry_after, 2.0)
        self.assertTrue(issubclass(steward.WaitTimeout, TimeoutError))


class Bodies(unittest.TestCase):
    def test_multipart_has_the_job_field_first_then_each_input_named_by_its_path(self):
        import tempfile, os
        folder = tempfile.mkdtemp()
        os.makedirs(os.path.join(folder, "data"))
        with open(os.path.join(folder, "data", "a.txt"), "wb") as file:
            file.write(b"alpha")
        make, content_type = _job_files._multipart(b"name: x\n", ["data/a.txt"], folder)
        boundary = content_type.split("boundary=")[1]
        for _ in range(2):  # made again for a second try
            chunks, length = make()
            body = b"".join(chunks)
            self.assertEqual(len(body), length)
        self.assertEqual(
            body.decode(),
            f'--{boundary}\r\nContent-Disposition: form-data; name="job"\r\n\r\nname: x\n\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="data/a.txt"; filename="data/a.txt"\r\n'
            f"Content-Type: application/octet-stream\r\n\r\nalpha\r\n--{boundary}--\r\n",
        )
        with self.assertRaises(steward.Invalid) as raised:
            _job_files._inputs_to_send(["data/a.txt", "missing.txt"], folder)
        self.assertEqual(raised.exception.field, "inputs[1]")
        self.assertEqual(_job_files._inputs_to_send(["../up.txt", 3], folder), [])

    def test_inputs_by_url_are_not_uploaded(self):
        import tempfile, os
        folder = tempfile.mkdtemp()
        with open(os.path.join(folder, "a.txt"), "wb") as file:
            file.write(b"alpha")
        inputs = ["a.txt", {"url": "s3://climate/grid.nc", "sha256": "0" * 64}, {"url": "https://h/x", "as": "y"}]
        # Only the path is uploaded; the mappings go to the server in the job file as they are.
        self.assertEqual(_job_files._inputs_to_send(inputs, folder), ["a.txt"])
        self.assertEqual(
            _job_files._workflow_inputs({"one": {"inputs": inputs, "outputs": [{"path": "o", "to": "s3://r/o"}]}}, folder),
            [("one/a.txt", "a.txt")],
        )

    def test_server_sent_events(self):
        stream = io.BytesIO(
            b": steward events\n\nevent: job\nid: 4\ndata: {\"id\": 4}\n\n: keep-alive\n\n"
            b"event: progress\ndata: {\"jobId\": \"1\"}\n\nevent: job\nid: 5\ndata: {\"id\":\ndata: 5}\n\n"
        )
        answer = type("A", (), {"response": stream})()
        self.assertEqual(
            list(_events._server_sent_events(answer)),
            [("job", "4", '{"id": 4}'), ("progress", None, '{"jobId": "1"}'), ("job", "5", '{"id":\n5}')],
        )

    def test_link_next(self):
        self.assertEqual(
            _api_values._next_link('</api/v1/jobs?limit=2&after=4>; rel="next"'), "/api/v1/jobs?limit=2&after=4"
        )
        self.assertIsNone(_api_values._next_link(None))
        self.assertIsNone(_api_values._next_link('</x>; rel="prev"'))

    def test_what_submit_takes_for_a_path(self):
        self.assertTrue(_job_files._looks_like_path("examples/python/job.yaml"))
        self.assertFalse(_job_files._looks_like_path("name: x\ncommand: true\n"))
        self.assertFalse(_job_files._looks_like_path('{"name": "x", "command": "true"}'))


class ManyJobs(unittest.TestCase):
    """job_states and cancel_jobs: a list split in requests of 1000 ids, as the CLI splits it."""

    def client_answering(self, sent):
        def answer(method, path, query=None, payload=None, **options):
            ids = query["ids"].split(",") if query else payload["ids"]
            sent.append((method, path, len(ids), options))
            return {"jobs": [{"id": each, "state": None if each == "0" else "cancelled"} for each in ids]}

        steward_client = steward.Client("http://127.0.0.1:9", "t")
        steward_client._json = answer
        return steward_client

    def test_a_thousand_ids_at_a_time(self):
        self.assertEqual([len(run) for run in _many_jobs.batches(range(2001))], [1000, 1000, 1])
        self.assertEqual(_many_jobs.batches([]), [])
        self.assertEqual(_many_jobs.batches("abcde", 2), [["a", "b"], ["c", "d"], ["e"]])

    def test_a_single_id_is_a_list_of_one(self):
        self.assertEqual(_many_jobs.job_ids("12"), ["12"])
        self.assertEqual(_many_jobs.job_ids(steward.Job(None, "12")), ["12"])
        self.assertEqual(_many_jobs.job_ids(iter([3, "4"])), ["3", "4"])

    def test_states_and_cancels_of_many_ids_in_requests_of_a_thousand(self):
        ids = [str(each) for each in range(2500)]
        for call, method, path, options in [
            ("job_states", "GET", "/api/v1/jobs/states", {}),
            ("cancel_jobs", "POST", "/api/v1/jobs/cancel", {"idempotent": True}),
        ]:
            with self.subTest(call=call):
                sent = []
                states = getattr(self.client_answering(sent), call)(ids)
                self.assertEqual(sent, [(method, path, 1000, options), (method, path, 1000, options), (method, path, 500, options)])
                self.assertEqual(list(states), ids)
                self.assertEqual((states["0"], states["2499"]), (None, "cancelled"))

    def test_no_ids_no_request(self):
        sent = []
        steward_client = self.client_answering(sent)
        self.assertEqual((steward_client.job_states([]), steward_client.cancel_jobs([])), ({}, {}))
        self.assertEqual(sent, [])


if __name__ == "__main__":
    unittest.main()
