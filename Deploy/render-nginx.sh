#!/usr/bin/env bash
# Render Deploy/nginx/tideway.conf.template to stdout.
#
# Production (values below are the defaults, SERVER_NAME is required):
#   SERVER_NAME=sync.example.org Deploy/render-nginx.sh > /etc/nginx/sites-available/tideway
# The dev stack (Deploy/dev/stack.sh) calls this with its own values.
#
# Settings (environment):
#   SERVER_NAME   public host name                 (required)
#   HTTPS_PORT    443          HTTP_PORT   80
#   LISTEN_ADDRS  "* [::]"     addresses to listen on, space separated
#   TLS_CERT      /etc/letsencrypt/live/$SERVER_NAME/fullchain.pem
#   TLS_KEY       /etc/letsencrypt/live/$SERVER_NAME/privkey.pem
#   TLS_TICKETS   /etc/tideway/tls-tickets   the session-ticket keys every instance shares
#                 (current.key, next.key, previous.key; made and rotated by
#                 Deploy/tls-ticket-keys.sh; docs/operations.md, "TLS sessions")
#   RUN_DIR       /run/tideway               (worker-N.sock live here)
#   WORKERS       2
#   STATIC_DIR    /opt/tideway/Static
#   BLOB_ROOT     /var/lib/tideway/blobs
#   NGINX         nginx binary whose version decides the http2 syntax
#   NCHAN_REDIS   empty (one node: events in nginx's memory), or a Redis URL such as
#                 redis://10.77.0.10:6379 that every node shares (Deploy/cluster)
#   NGINX_INSTANCES  1         nginx instances (masters) that share the ports, each with one
#                 worker process and its own nchan, so that an event's fan-out runs on
#                 that many cores (docs/performance/round-09.md, "Two nginx instances"). Above 1,
#                 the listen lines get "reuseport" (the kernel spreads new connections
#                 over the instances) and the workers' kept-alive connections are shared
#                 out between the instances (keepalive 32 in all). Render one file per
#                 instance, each with its NGINX_INSTANCE.
#   NGINX_INSTANCE   1         which instance this file is for: its publisher socket is
#                 $RUN_DIR/events-publish.sock for 1, events-publish-N.sock for N > 1
#   TRUSTED_PROXIES  ""        addresses or CIDRs of proxies in front of nginx (a load
#                 balancer, a CDN), space separated: from them, the client address is
#                 taken from X-Forwarded-For (the workers' rate limits and audit log use
#                 it); empty: the connection's address, and X-Forwarded-For is ignored
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
: "${SERVER_NAME:?set SERVER_NAME to the public host name}"
HTTPS_PORT=${HTTPS_PORT:-443}
HTTP_PORT=${HTTP_PORT:-80}
LISTEN_ADDRS=${LISTEN_ADDRS:-"* [::]"}
TLS_CERT=${TLS_CERT:-/etc/letsencrypt/live/$SERVER_NAME/fullchain.pem}
TLS_KEY=${TLS_KEY:-/etc/letsencrypt/live/$SERVER_NAME/privkey.pem}
TLS_TICKETS=${TLS_TICKETS:-/etc/tideway/tls-tickets}
RUN_DIR=${RUN_DIR:-/run/tideway}
WORKERS=${WORKERS:-2}
STATIC_DIR=${STATIC_DIR:-/opt/tideway/Static}
BLOB_ROOT=${BLOB_ROOT:-/var/lib/tideway/blobs}
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
NCHAN_REDIS=${NCHAN_REDIS:-}
TRUSTED_PROXIES=${TRUSTED_PROXIES:-}
NGINX_INSTANCES=${NGINX_INSTANCES:-1}
NGINX_INSTANCE=${NGINX_INSTANCE:-1}
[[ $NGINX_INSTANCES =~ ^[1-9][0-9]*$ && $NGINX_INSTANCE =~ ^[1-9][0-9]*$ ]] && ((NGINX_INSTANCE <= NGINX_INSTANCES)) ||
    { echo "render-nginx.sh: NGINX_INSTANCE must be 1..NGINX_INSTANCES" >&2; exit 1; }
# With Redis every instance would hold every channel, and the publisher, publishing in each,
# would send every event twice.
[[ -z $NCHAN_REDIS || $NGINX_INSTANCES == 1 ]] ||
    { echo "render-nginx.sh: NCHAN_REDIS takes one nginx instance (NGINX_INSTANCES=1)" >&2; exit 1; }

# nginx refuses to start without them; say how they are made instead.
for name in current next previous; do
    [[ -s $TLS_TICKETS/$name.key ]] ||
        { echo "render-nginx.sh: no $TLS_TICKETS/$name.key: run Deploy/tls-ticket-keys.sh make $TLS_TICKETS" >&2; exit 1; }
done

# "http2 on;" exists from nginx 1.25.1; older versions (Debian 12 has 1.22)
# only know the "http2" flag of listen.
version=$("$NGINX" -v 2>&1 | sed -n 's|.*nginx/\([0-9.]*\).*|\1|p')
if [[ $(printf '%s\n' 1.25.1 "$version" | sort -V | head -n1) == 1.25.1 ]]; then
    http2_directive='http2 on;' listen_http2=''
else
    http2_directive="# http2: on the listen lines (nginx $version)" listen_http2=' http2'
fi

upstreams='' listen_http='' listen_https=''
# max_fails=0: a local worker is never taken out of rotation. nginx's default marks a
# server down for 10 s after one failed request; under a burst (10,000 event streams
# closing at once, each with its unsubscribe hook) that took every worker out and refused
# the next 1,000 subscriptions with 503. A worker that is really gone is restarted by its
# supervisor within a second, and fastcgi_next_upstream tries the other one meanwhile.
for ((i = 1; i <= WORKERS; i++)); do
    upstreams+="    server unix:$RUN_DIR/worker-$i.sock max_fails=0;"$'\n'
done
# Several instances bind the same ports, each its own socket (SO_REUSEPORT).
reuseport=''
((NGINX_INSTANCES == 1)) || reuseport=' reuseport'
read -ra addrs <<<"$LISTEN_ADDRS" # no globbing of "*"
for addr in "${addrs[@]}"; do
    listen_http+="    listen $addr:$HTTP_PORT$reuseport;"$'\n'
    listen_https+="    listen $addr:$HTTPS_PORT ssl$listen_http2$reuseport;"$'\n'
done
# Each kept-alive connection to a worker pins one of its threads: the instances share the
# one instance's 32 between them, so that together they pin no more threads than it did.
keepalive=$(((32 + NGINX_INSTANCES - 1) / NGINX_INSTANCES))
publish_socket=$RUN_DIR/events-publish.sock
((NGINX_INSTANCE == 1)) || publish_socket=$RUN_DIR/events-publish-$NGINX_INSTANCE.sock
redis_upstream='# events: in this nginx only (NCHAN_REDIS unset)' redis_pass='# (events in memory)'
if [[ -n $NCHAN_REDIS ]]; then
    # Accurate counts: the stream recount of `tideway events` asks for a channel's
    # subscribers over every node, not a cached estimate.
    redis_upstream="upstream tideway_redis {
    nchan_redis_server $NCHAN_REDIS;
    nchan_redis_accurate_subscriber_count on;
}"
    redis_pass='nchan_redis_pass tideway_redis;'
fi
port_suffix=''
real_ip=''
read -ra proxies <<<"$TRUSTED_PROXIES"
for proxy in "${proxies[@]}"; do
    [[ $proxy =~ ^[0-9A-Fa-f.:/]+$ ]] || { echo "render-nginx.sh: not an address or CIDR: $proxy" >&2; exit 1; }
    real_ip+="    set_real_ip_from $proxy;"$'\n'
done
if [[ -n $real_ip ]]; then
    real_ip+="    real_ip_header X-Forwarded-For;"$'\n'"    real_ip_recursive on;"
else
    real_ip="    # No trusted proxy in front (TRUSTED_PROXIES): the client address is the connection's."
fi
[[ $HTTPS_PORT == 443 ]] || port_suffix=":$HTTPS_PORT"
# What nginx passes a worker with each request: only what the workers read (HTTPRequest and
# RequestFields in Sources/FastCGI, and the headers their callers ask for), not Debian's
# /etc/nginx/fastcgi_params (twenty parameters, most never read) nor every request header
# as an HTTP_* parameter: nginx evaluates each and libfcgi copies each into an allocation of
# its own, per request (docs/performance/round-22.md, "What the workers read"). A header a
# worker starts to read must be added here. Headers and the body's type and length go only
# when not empty: the workers take an empty one as absent. Rendered in the server block and,
# repeated, in the events hook's location, which has fastcgi_param lines of its own.
fastcgi_params=$(cat <<'PARAMS'
# What the workers read (Deploy/render-nginx.sh says why no more; a header they start to
# read goes there). No request header reaches them but these: no HTTP_PROXY (httpoxy).
fastcgi_pass_request_headers off;
fastcgi_param REQUEST_METHOD $request_method;
fastcgi_param DOCUMENT_URI $document_uri;
fastcgi_param QUERY_STRING $query_string if_not_empty;
fastcgi_param CONTENT_TYPE $content_type if_not_empty;
fastcgi_param CONTENT_LENGTH $content_length if_not_empty;
fastcgi_param REMOTE_ADDR $remote_addr;
fastcgi_param REQUEST_ID $request_id;
fastcgi_param HTTP_AUTHORIZATION $http_authorization if_not_empty;
fastcgi_param HTTP_COOKIE $http_cookie if_not_empty;
fastcgi_param HTTP_USER_AGENT $http_user_agent if_not_empty;
fastcgi_param HTTP_IF_NONE_MATCH $http_if_none_match if_not_empty;
fastcgi_param HTTP_IF_MODIFIED_SINCE $http_if_modified_since if_not_empty;
fastcgi_param HTTP_LAST_EVENT_ID $http_last_event_id if_not_empty;
PARAMS
)

# Bash 5.2 would expand "&" in a replacement to the matched text.
shopt -u patsub_replacement 2>/dev/null || true
conf=$(<"$here/nginx/tideway.conf.template")
conf=${conf//@UPSTREAM_SERVERS@/${upstreams%$'\n'}}
conf=${conf//@LISTEN_HTTP@/${listen_http%$'\n'}}
conf=${conf//@LISTEN_HTTPS@/${listen_https%$'\n'}}
conf=${conf//@HTTP2@/$http2_directive}
conf=${conf//@SERVER_NAME@/$SERVER_NAME}
conf=${conf//@HTTPS_PORT_SUFFIX@/$port_suffix}
conf=${conf//@TLS_CERT@/$TLS_CERT}
conf=${conf//@TLS_KEY@/$TLS_KEY}
conf=${conf//@TLS_TICKETS@/$TLS_TICKETS}
conf=${conf//@STATIC_DIR@/$STATIC_DIR}
conf=${conf//@BLOB_ROOT@/$BLOB_ROOT}
conf=${conf//@RUN_DIR@/$RUN_DIR}
conf=${conf//@KEEPALIVE@/$keepalive}
conf=${conf//@PUBLISH_SOCKET@/$publish_socket}
conf=${conf//@NCHAN_REDIS_UPSTREAM@/$redis_upstream}
conf=${conf//@NCHAN_REDIS_PASS@/$redis_pass}
conf=${conf//@REAL_IP@/${real_ip%$'\n'}}
conf=${conf//@FASTCGI_PARAMS@/$(sed 's/^/    /' <<<"$fastcgi_params")}
conf=${conf//@FASTCGI_PARAMS_HOOK@/$(sed 's/^/        /' <<<"$fastcgi_params")}

if grep -q '@[A-Z0-9_]*@' <<<"$conf"; then
    echo "render-nginx.sh: unreplaced placeholder in the template" >&2
    exit 1
fi
printf '%s\n' "$conf"
