# The mock backend on its own, for test suites in any language:
#   docker build -t toolcall-conformance-mock .
#   docker run --rm -p 9000:9000 toolcall-conformance-mock
# Point the proxy under test at http://localhost:9000/v1 and arm runs through the control
# API (docs/mock-backend.md). Arguments after the image name are added to the command,
# e.g. `--scenarios /cases` with `-v "$PWD/cases:/cases"` to preload your own scenarios.
FROM python:3.11-slim
WORKDIR /src
COPY pyproject.toml README.md hatch_build.py ./
COPY harness ./harness
COPY mock_backends ./mock_backends
COPY reference_proxy ./reference_proxy
COPY scenarios ./scenarios
RUN pip install --no-cache-dir . && rm -rf /src
WORKDIR /
EXPOSE 9000
ENTRYPOINT ["toolcall-conformance", "mock", "--host", "0.0.0.0", "--port", "9000"]
