/**
 * Remote calls between processes attached to one colors heap, in any language: arguments and
 * results are shared objects, so nothing is serialized. {@link org.colors.rpc.RpcServer} serves
 * the public methods of a Java object under an endpoint name; {@link org.colors.rpc.RpcClient}
 * calls an endpoint synchronously, asynchronously ({@link java.util.concurrent.CompletableFuture}),
 * in batches ({@link org.colors.rpc.RpcBatch}) or through a proxy of a Java interface. Built on
 * {@code colors::rpc} (libshared/include/colors/rpc.hpp).
 */
package org.colors.rpc;
