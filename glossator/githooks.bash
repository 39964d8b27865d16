# The body of both hooks as git starts them: gitserver.repos copies it into each
# repository's hooks/pre-receive and hooks/post-receive, after lines that set `hook`
# (its name), `python` and `entry` (glossator/githooks.py, the entry point in Python).
#
# A hook runs twice on every push, before git answers the client, so it is bash and
# nothing else while the server that runs the push answers it: bash starts in a few
# milliseconds where a Python interpreter takes 20-40 ms of CPU even without `site`,
# which on a loaded machine was most of a pushed edit's time (bench/git.py). It sends
# git's update lines to that server (GLOSSATOR_HOOK_CALLBACK, with the per-server
# GLOSSATOR_HOOK_TOKEN) on bash's own /dev/tcp, in the plain-text form of
# glossator.githooks (the request: repository, quarantine or URL, the update lines;
# the answer: the exit status, then the lines to print), prints the answer and exits
# with its status. Whenever the server cannot answer (no callback in the environment:
# a push by file:// or ssh; not reachable; not 200; a malformed answer), the same
# lines go to the Python entry point, told not to ask again, which does the work
# itself: a push is never accepted unchecked. A post-receive whose server took over
# TIMEOUT_S says so instead (the server may have queued the jobs; it reconciles
# anything left behind).

TIMEOUT_S=60  # glossator.githooks.CALLBACK_TIMEOUT_S
trap '' PIPE  # a closed socket fails a write (then the work is done here), not the hook

updates='' line=''
while IFS= read -r line || [[ -n $line ]]; do
    updates+=$line$'\n'
done

work_here() {
    # the here-string gives back the lines as git wrote them (it adds the last newline)
    GLOSSATOR_HOOK_CALLBACK='' exec "$python" -E -P -S "$entry" "$hook" <<<"${updates%$'\n'}"
}

callback=${GLOSSATOR_HOOK_CALLBACK:-}
[[ $callback == http://*:* && -n ${GLOSSATOR_HOOK_TOKEN:-} ]] || work_here
callback=${callback#http://}
callback=${callback%/}
host=${callback%:*} port=${callback##*:}
host=${host#\[} host=${host%\]}
# receive-pack runs its hooks in the repository with GIT_DIR=.; the name is the
# directory's (a repository being deleted has been renamed aside: the server says so)
cd -P -- "${GIT_DIR:-.}" 2>/dev/null || work_here
export GIT_DIR=$PWD
name=${PWD##*/}
name=${name%.git}
if [[ $hook == pre-receive ]]; then
    path=/api/hooks/pre-receive
    extra=${GIT_QUARANTINE_PATH:-}
    [[ -z $extra || $extra == /* ]] || extra=$PWD/$extra
else
    path=/api/hooks/post-receive
    extra=${GLOSSATOR_HOOK_URL:-}
fi
[[ $extra != *$'\n'* ]] || work_here  # one line of the request (a path could hold two)
body=$name$'\n'$extra$'\n'$updates

bytes() {  # the size of "$@" joined, in bytes: ${#…} counts characters in a UTF-8 locale
    local LC_ALL=C text
    printf -v text '%s' "$@"
    size=${#text}
}
bytes "$body"
{ exec 3<>"/dev/tcp/$host/$port"; } 2>/dev/null || work_here
printf 'POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
    "$path" "$callback" "$GLOSSATOR_HOOK_TOKEN" "$size" "$body" >&3 2>/dev/null || work_here

timed_out() {
    if [[ $hook == post-receive ]]; then
        echo "glossator: the server did not confirm the indexing within $TIMEOUT_S s; it queues any branch left behind by itself within 5 minutes"
        exit 0
    fi
    work_here  # the check is then made here
}

answer() {  # one line of the answer into $line; false at its end, timed_out on a timeout
    IFS= read -r -t "$TIMEOUT_S" -u 3 line && return 0
    (($? > 128)) && timed_out
    [[ -n $line ]]
}

answer || work_here
[[ $line == "HTTP/1."?" 200 "* ]] || work_here
length=''
while answer && [[ $line != $'\r' && -n $line ]]; do  # the headers
    [[ $line == [Cc]ontent-[Ll]ength:* ]] && length=${line//[!0-9]/}
done
answer || work_here
status=$line
[[ $status =~ ^[0-9]+$ ]] || work_here
output=''
while answer; do
    output+=$line$'\n'
done
exec 3<&-
bytes "$status" $'\n' "$output"
[[ $size == "$length" ]] || work_here  # an answer cut short is no answer
if [[ $hook == pre-receive ]]; then
    printf '%s' "$output" >&2
else
    printf '%s' "$output"
fi
exit "$status"
