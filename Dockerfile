FROM python:3.11-slim
# Java 17 and the Postgres JDBC driver for the Spark executor
RUN apt-get update && apt-get install -y --no-install-recommends \
        openjdk-17-jre-headless libpostgresql-jdbc-java \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY views ./views
COPY server ./server
COPY storage ./storage
COPY migrations ./migrations
# editable: the migrations are read from /app/migrations next to the packages
RUN pip install --no-cache-dir -e '.[spark]'
# no SPARK_LOCAL_IP: a Spark master, worker or driver binds its container's address
ENV PODVIEWS_HOST=0.0.0.0 PYSPARK_PYTHON=/usr/local/bin/python
EXPOSE 8000
CMD ["podviews", "serve"]
