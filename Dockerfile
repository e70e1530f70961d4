FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY views ./views
COPY server ./server
COPY storage ./storage
RUN pip install --no-cache-dir .
ENV PODVIEWS_HOST=0.0.0.0
EXPOSE 8000
CMD ["podviews", "serve"]
