#ifndef TIDEWAY_CCURL_SHIM_H
#define TIDEWAY_CCURL_SHIM_H
#include <curl/curl.h>
#include <string.h>

/* curl_easy_setopt is variadic, which Swift cannot call: one typed wrapper per kind of value. */
static inline CURLcode tw_curl_set_string(CURL *curl, CURLoption option, const char *value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode tw_curl_set_long(CURL *curl, CURLoption option, long value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode tw_curl_set_list(CURL *curl, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(curl, option, value);
}

/* A message handed to libcurl for upload: it pulls the bytes through tw_curl_read. */
typedef struct {
    const char *bytes;
    size_t length;
    size_t offset;
} tw_curl_upload;

static size_t tw_curl_read(char *buffer, size_t size, size_t count, void *userdata) {
    tw_curl_upload *upload = (tw_curl_upload *)userdata;
    size_t room = size * count;
    size_t left = upload->length - upload->offset;
    size_t n = left < room ? left : room;
    memcpy(buffer, upload->bytes + upload->offset, n);
    upload->offset += n;
    return n;
}

/* A C function pointer cannot be made from Swift here without a thunk; set it from C. */
static inline CURLcode tw_curl_set_upload(CURL *curl, tw_curl_upload *upload) {
    CURLcode rc = curl_easy_setopt(curl, CURLOPT_READFUNCTION, tw_curl_read);
    if (rc == CURLE_OK) rc = curl_easy_setopt(curl, CURLOPT_READDATA, (void *)upload);
    if (rc == CURLE_OK) rc = curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    return rc;
}
/* Where an answer's bytes go: a Swift function (no captures) and its context pointer. */
typedef size_t (*tw_curl_write_fn)(char *bytes, size_t size, size_t count, void *userdata);
static inline CURLcode tw_curl_set_write(CURL *curl, tw_curl_write_fn function, void *userdata) {
    CURLcode rc = curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, function);
    if (rc == CURLE_OK) rc = curl_easy_setopt(curl, CURLOPT_WRITEDATA, userdata);
    return rc;
}

/* Header lines go to the same kind of function (an answer's status before its body). */
static inline CURLcode tw_curl_set_header(CURL *curl, tw_curl_write_fn function, void *userdata) {
    CURLcode rc = curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, function);
    if (rc == CURLE_OK) rc = curl_easy_setopt(curl, CURLOPT_HEADERDATA, userdata);
    return rc;
}

/* Called about once a second even when no byte comes: a nonzero answer stops the transfer. */
typedef int (*tw_curl_progress_fn)(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow);
static inline CURLcode tw_curl_set_progress(CURL *curl, tw_curl_progress_fn function, void *userdata) {
    CURLcode rc = curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, function);
    if (rc == CURLE_OK) rc = curl_easy_setopt(curl, CURLOPT_XFERINFODATA, userdata);
    if (rc == CURLE_OK) rc = curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    return rc;
}

/* A request body, copied by libcurl (any method: CURLOPT_CUSTOMREQUEST names it). */
static inline CURLcode tw_curl_set_body(CURL *curl, const void *bytes, long length) {
    CURLcode rc = curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, length);
    if (rc == CURLE_OK) rc = curl_easy_setopt(curl, CURLOPT_COPYPOSTFIELDS, bytes);
    return rc;
}

static inline long tw_curl_response_code(CURL *curl) {
    long code = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    return code;
}
#endif
