/* Fault servers of cold starts parked between them: a start hands one its context. */
#include <pthread.h>

#include "cold/cold.h"

/* Fault servers parked between cold starts (made ahead by cold_prepare): a start hands
 * one its context rather than creating a thread (~50-130 us here); past SERVERS at once, a
 * start creates its own. */
#define SERVERS 4
static pthread_mutex_t park_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cv = PTHREAD_COND_INITIALIZER;
static struct server {
	struct cold *job;	/* the start it serves, NULL when parked */
	void *(*serve)(void *); /* and how */
	int started, busy;
} servers[SERVERS];

static void *server_main(void *arg)
{
	struct server *sv = arg;
	pthread_setname_np(pthread_self(), "ember-faults");
	pthread_mutex_lock(&park_mu);
	for (;;) {
		while (!sv->job)
			pthread_cond_wait(&park_cv, &park_mu);
		struct cold *c = sv->job;
		void *(*serve)(void *) = sv->serve;
		pthread_mutex_unlock(&park_mu);
		serve(c);
		pthread_mutex_lock(&park_mu);
		sv->job = NULL;
		pthread_cond_broadcast(&park_cv);
	}
	return NULL;
}

/* with park_mu held: a parked server not taken, else one started now, else NULL */
static struct server *idle_server(void)
{
	for (int i = 0; i < SERVERS; i++)
		if (servers[i].started && !servers[i].busy)
			return &servers[i];
	for (int i = 0; i < SERVERS; i++) {
		if (servers[i].started)
			continue;
		pthread_t th;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		servers[i].started = pthread_create(&th, &attr, server_main, &servers[i]) == 0;
		pthread_attr_destroy(&attr);
		return servers[i].started ? &servers[i] : NULL;
	}
	return NULL;
}

void cold_prepare(void)
{
	pthread_mutex_lock(&park_mu);
	idle_server();
	pthread_mutex_unlock(&park_mu);
}

int snap_park_start(struct cold *c, void *(*serve)(void *))
{
	pthread_mutex_lock(&park_mu);
	struct server *sv = idle_server();
	if (sv) {
		sv->busy = 1;
		sv->serve = serve;
		sv->job = c;
		pthread_cond_broadcast(&park_cv);
	}
	pthread_mutex_unlock(&park_mu);
	c->server = sv;
	return sv ? 0 : pthread_create(&c->th, NULL, serve, c);
}

void snap_park_stop(struct cold *c)
{
	struct server *sv = c->server;
	if (!sv) {
		pthread_join(c->th, NULL);
		return;
	}
	pthread_mutex_lock(&park_mu);
	while (sv->job)
		pthread_cond_wait(&park_cv, &park_mu);
	sv->busy = 0;
	pthread_mutex_unlock(&park_mu);
	c->server = NULL;
}
